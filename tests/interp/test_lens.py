"""interp.lens: the logit lens reproduces the model's logits at the last depth (three families,
built in the test), a readout that misses them is refused, and the translator fit lowers the
KL on a toy problem, deterministically."""

from __future__ import annotations

import pytest
import torch
import transformers

from bayesgeom import interp
from bayesgeom.infotheory import kl_bits
from bayesgeom.interp import lens as L

PROMPTS = [[1, 2, 3, 4, 5], [6, 7, 8], [9, 10, 11, 12]]


def tiny(family: str) -> interp.InterpModel:
    torch.manual_seed(0)
    if family == "gpt2":  # the wind tunnels' transformer: LayerNorm with bias, tied head
        hf = transformers.GPT2LMHeadModel(transformers.GPT2Config(
            n_layer=3, n_head=2, n_embd=16, vocab_size=23, n_positions=16))
    elif family == "llama":  # RMSNorm, untied head
        hf = transformers.LlamaForCausalLM(transformers.LlamaConfig(
            vocab_size=23, hidden_size=16, intermediate_size=32, num_hidden_layers=3,
            num_attention_heads=4, num_key_value_heads=2, max_position_embeddings=16,
            tie_word_embeddings=False, initializer_range=0.2))
    else:  # recurrent, no attention: Mamba's RMSNorm norm_f
        hf = transformers.MambaForCausalLM(transformers.MambaConfig(
            vocab_size=23, hidden_size=16, state_size=4, num_hidden_layers=3, expand=2,
            conv_kernel=2))
    return interp.InterpModel(hf)


@pytest.mark.parametrize("family", ["gpt2", "llama", "mamba"])
def test_logit_lens_at_the_last_depth_is_the_models_output(family):
    m = tiny(family)
    ll = interp.logit_lens(m, PROMPTS, ids=None, positions="all")
    assert ll.sites == ["resid_pre.0", "resid_post.0", "resid_post.1", "resid_post.2"]
    assert list(ll.log_probs.shape) == [4, sum(map(len, PROMPTS)), 23]
    own = torch.cat([torch.log_softmax(m.forward(m.batch([p]))[0].float(), -1)
                     for p in PROMPTS])
    torch.testing.assert_close(ll.log_probs[-1], own, atol=2e-5, rtol=0)
    # an earlier depth is not the output (the check above can fail)
    assert (ll.log_probs[1] - own).abs().max() > 1e-2
    # restricted to a few ids: the model's distribution over them, renormalised
    sub = interp.logit_lens(m, PROMPTS, ids=[4, 9, 2], positions="last")
    want = torch.log_softmax(m.logits(PROMPTS)[:, [4, 9, 2]], -1)
    torch.testing.assert_close(sub.log_probs[-1], want, atol=2e-5, rtol=0)
    assert sub.position.tolist() == [4, 2, 3] and sub.prompt_index.tolist() == [0, 1, 2]


def test_readout_that_misses_the_logits_is_refused():
    m = tiny("gpt2")
    ro = L.readout(m, [1, 2])
    assert L.check_readout(m, PROMPTS, ro) < 1e-5
    handle = m.hf.lm_head.register_forward_hook(lambda _m, _a, out: 1.5 * out)
    try:  # a logit scale the lens does not know of
        with pytest.raises(interp.InterpError, match="soft cap or scale"):
            L.check_readout(m, PROMPTS, L.readout(m))
    finally:
        handle.remove()


def test_sites_and_depths():
    m = tiny("llama")
    assert L.lens_sites(m, [2]) == ["resid_pre.0", "resid_post.2"]
    assert [L.site_depth(s) for s in L.lens_sites(m)] == [0, 1, 2, 3]
    with pytest.raises(interp.UnknownSiteError):
        L.lens_sites(m, [3])
    with pytest.raises(interp.InterpError):
        L.site_depth("attn_out.1")
    rows = L.read_residuals(m, PROMPTS, (0, -1), [1])
    assert rows["resid_post.1"].shape == (6, 16) and rows["position"].tolist() == [0, 4, 0, 2,
                                                                                  0, 3]


def _toy():
    """Rows, a readout and a target a translator can reach exactly (A = B, b = c)."""
    torch.manual_seed(0)
    m = interp.InterpModel(transformers.GPT2LMHeadModel(transformers.GPT2Config(
        n_layer=1, n_head=2, n_embd=16, vocab_size=23, initializer_range=0.5)))
    ro = L.readout(m, [3, 5, 7])
    g = torch.Generator().manual_seed(1)
    h = torch.randn(200, 16, generator=g)
    B, c = 0.5 * torch.randn(16, 16, generator=g), torch.randn(16, generator=g)
    with torch.no_grad():
        return ro, h, torch.softmax(ro(h + h @ B.T + c), -1)


def test_translator_fit_lowers_kl_and_generalises():
    ro, h, p = _toy()
    fit = interp.fit_translator(h[:150], p[:150], ro, steps=60)
    assert fit.iterations > 1 and fit.kl_bits < 0.1 * fit.kl_start_bits
    held = kl_bits(p[150:], log_q=L.lens_log_probs(h[150:], ro, fit.translator))
    start = kl_bits(p[150:], log_q=L.lens_log_probs(h[150:], ro))
    assert float(held.mean()) < 0.2 * float(start.mean())
    # a ridge penalty keeps A smaller
    small = interp.fit_translator(h[:150], p[:150], ro, steps=60, l2=1.0)
    assert small.translator.A.norm() < fit.translator.A.norm()


def test_translator_fit_is_deterministic_and_checks_shapes():
    ro, h, p = _toy()
    a = interp.fit_translator(h, p, ro, steps=20)
    b = interp.fit_translator(h, p, ro, steps=20)
    assert torch.equal(a.translator.A, b.translator.A) and torch.equal(a.translator.b,
                                                                       b.translator.b)
    assert a.kl_bits == b.kl_bits
    with pytest.raises(interp.InterpError, match="do not fit"):
        interp.fit_translator(h, p[:, :2], ro)
    with pytest.raises(interp.InterpError, match="steps"):
        interp.fit_translator(h, p, ro, steps=0)


def test_fewer_rows_than_dimensions_fit_in_their_span():
    """N < D: the fit in full A (plain L-BFGS from zero) never leaves the rows' span, so
    fitting A = B Vᵀ there (interp.lens.fit_translator) searches the same translators; the
    two reach the same loss (their iterates differ: L-BFGS scales its first step by the
    gradient's L1 norm, which a rotation changes)."""
    ro, h, p = _toy()
    x, t = h[:10], p[:10]  # 10 rows, 16 dimensions
    fast = interp.fit_translator(x, t, ro, steps=30)
    tr = L.Translator(16)
    opt = torch.optim.LBFGS(tr.parameters(), max_iter=30, history_size=20,
                            line_search_fn="strong_wolfe", tolerance_grad=1e-9,
                            tolerance_change=1e-12)

    def closure():
        opt.zero_grad()
        loss = kl_bits(t, log_q=torch.log_softmax(ro(tr(x)), -1)).mean()
        loss.backward()
        return loss

    opt.step(closure)
    v = torch.linalg.svd(x, full_matrices=False).Vh.T  # [16, 10]
    A = tr.A.detach()
    assert (A - A @ v @ v.T).norm() < 1e-5 * A.norm()  # full A stayed in the span
    assert (fast.translator.A - fast.translator.A @ v @ v.T).norm() < 1e-5 * A.norm()
    slow = float(kl_bits(t, log_q=L.lens_log_probs(x, ro, tr)).mean())
    assert fast.kl_bits < 0.05 * fast.kl_start_bits and slow < 0.05 * fast.kl_start_bits
