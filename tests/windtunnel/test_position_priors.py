"""ALiBi and BAM as positional schemes of the Llama-style wind tunnel (issue 14): BAM's special
cases (NoPE exactly, ALiBi to 1e-5), finite gradients at i = j, the prior seen by every kernel
and by the gradient taps, chunked == full evaluation, save/reload, and the prior readout."""

from __future__ import annotations

import math

import numpy as np
import pytest
import torch
from transformers import AutoModelForCausalLM

from bayesgeom import interp
from bayesgeom.interp.attention_taps import attention_gradients
from bayesgeom.probes import routing_law as rl
from bayesgeom.windtunnel import TaskConfigError, load_run, make_task
from bayesgeom.windtunnel.llama import build_llama
from bayesgeom.windtunnel.long_eval import chunked_logits, position_limit
from bayesgeom.windtunnel.position_priors import (
    BAM_EPS,
    PositionPrior,
    alibi_bias,
    alibi_slopes,
    bam_bias,
    key_distances,
)
from bayesgeom.windtunnel.prior_readout import read_priors
from bayesgeom.windtunnel.training import TrainConfig, task_loss, train
from bayesgeom.windtunnel.transformer import get_preset

TASK = make_task("bijection", V=6)


def _llama(scheme: str, seed: int = 0, sharpen: float = 8.0, **options: bool):
    """A tiny model with sharper attention than at initialisation (q, k weights scaled), the
    same weights for every scheme at the same seed."""
    torch.manual_seed(seed)
    m = build_llama(TASK, get_preset("tiny"), scheme, **options).eval()
    with torch.no_grad():
        for layer in m.model.layers:
            layer.self_attn.q_proj.weight.mul_(sharpen)
            layer.self_attn.k_proj.weight.mul_(sharpen)
    return m


def _priors(m) -> list[PositionPrior]:
    return [layer.self_attn.position_prior for layer in m.model.layers]


def _set(prior: PositionPrior, alpha=None, beta=None, mu=None) -> None:
    with torch.no_grad():
        for t, v in ((prior.theta_alpha, alpha), (prior.theta_beta, beta),
                     (prior.theta_mu, mu)):
            if v is not None:
                t.copy_(torch.as_tensor(v, dtype=t.dtype))


def _attentions(m, ids):
    with torch.no_grad():
        return m(ids, output_attentions=True).attentions


IDS = TASK.sample(4, 0).input_ids  # [4, 9]


def test_bam_with_zero_shape_is_nope_exactly_whatever_its_scale_and_location():
    nope, bam = _llama("nope"), _llama("bam", bam_learn_mu=True)
    for prior in _priors(bam):
        _set(prior, alpha=torch.randn(2) * 2, mu=torch.randn(2))  # θβ = 0 (initial)
    for a, b in zip(_attentions(nope, IDS), _attentions(bam, IDS), strict=True):
        assert torch.equal(a, b)
    with torch.no_grad():
        assert torch.equal(nope(IDS).logits, bam(IDS).logits)
    # control: any shape θβ ≠ 0 moves the attention
    _set(_priors(bam)[0], beta=[0.5, 1.0])
    assert (_attentions(bam, IDS)[0] - _attentions(nope, IDS)[0]).abs().max() > 1e-3


def _alibi_by_hand(m, ids) -> torch.Tensor:
    """Layer 0's attention from ALiBi's definition: softmax(c q_i·k_j − m_h (i − j)), j ≤ i."""
    attn = m.model.layers[0].self_attn
    with torch.no_grad():
        h = m.model.layers[0].input_layernorm(m.model.embed_tokens(ids))
        B, T, _ = h.shape
        q = attn.q_proj(h).view(B, T, 2, -1).transpose(1, 2)
        k = attn.k_proj(h).view(B, T, 2, -1).transpose(1, 2)
        d = torch.arange(T)[:, None] - torch.arange(T)[None, :]
        m_h = torch.tensor([2 ** (-8 * 1 / 2), 2 ** (-8 * 2 / 2)])
        s = attn.scaling * q @ k.transpose(-1, -2) - m_h[:, None, None] * d
        return torch.softmax(s.masked_fill(d < 0, -math.inf), -1)


def test_alibi_is_alibi_and_bam_with_log_slopes_and_unit_shape_is_alibi():
    alibi, bam, nope = _llama("alibi"), _llama("bam"), _llama("nope")
    for prior in _priors(bam):
        _set(prior, alpha=alibi_slopes(2).log(), beta=[1.0, 1.0])
    ref = _attentions(alibi, IDS)
    torch.testing.assert_close(ref[0], _alibi_by_hand(alibi, IDS), rtol=1e-5, atol=1e-7)
    for a, b in zip(ref, _attentions(bam, IDS), strict=True):
        torch.testing.assert_close(b, a, rtol=1e-5, atol=1e-7)
    assert (ref[0] - _attentions(nope, IDS)[0]).abs().max() > 1e-2  # ALiBi is not NoPE
    assert alibi_slopes(8).tolist() == [2.0 ** -h for h in range(1, 9)]


def test_bam_gradients_are_finite_at_zero_distance():
    m = _llama("bam", bam_learn_mu=True)
    for prior in _priors(m):
        _set(prior, alpha=[0.3, -0.2], beta=[2.0, 0.7])  # μ = 0: |i − j − μ| = 0 at i = j
    loss = task_loss(m, TASK, TASK.sample(4, 1))
    loss.backward()
    for prior in _priors(m):
        for t in (prior.theta_alpha, prior.theta_beta, prior.theta_mu):
            assert t.grad is not None and torch.isfinite(t.grad).all() and t.grad.abs().sum() > 0
    # at d = μ the θβ-gradient of B is −exp(θα) ε^θβ log ε, finite; float64, by autograd
    a, b, mu = (torch.tensor([v], dtype=torch.float64, requires_grad=True)
                for v in (0.3, 0.7, 0.0))
    (g_beta,) = torch.autograd.grad(bam_bias(torch.zeros(1, dtype=torch.float64), a, b, mu)
                                    .sum(), b)
    want = -math.exp(0.3) * BAM_EPS ** 0.7 * math.log(BAM_EPS)
    assert float(g_beta) == pytest.approx(want, rel=1e-12)


@pytest.mark.parametrize("impl", ["sdpa", "bayesgeom_taps"])
def test_every_kernel_sees_the_prior(impl):
    m = _llama("bam")
    for prior in _priors(m):
        _set(prior, alpha=[0.5, -1.0], beta=[1.5, 0.8])
    with torch.no_grad():
        ref = m(IDS).logits
        m.set_attn_implementation(impl)
        got = m(IDS).logits
        m.set_attn_implementation("eager")
    torch.testing.assert_close(got, ref, rtol=1e-5, atol=1e-5)


SCHEMES = {"learned": {}, "rope": {}, "nope": {}, "alibi": {}, "bam": {},
           "bam-shared": {"bam_shared": True}, "bam-ssmax": {"ssmax": True}}


@pytest.mark.parametrize("name", SCHEMES)
def test_chunked_evaluation_equals_the_full_forward(name):
    m = _llama(name.split("-")[0], seed=1, **SCHEMES[name])
    if name.startswith("bam"):
        for prior in _priors(m):
            _set(prior, alpha=[0.2, -0.5], beta=[1.2, 0.6])
    if name == "bam-ssmax":
        with torch.no_grad():
            for layer in m.model.layers:
                layer.self_attn.ssmax_scale.copy_(torch.tensor([0.7, 1.3]))
    T = position_limit(m) or 30
    ids = torch.randint(0, TASK.vocab_size, (2, T), generator=torch.Generator().manual_seed(0))
    with torch.no_grad():
        full = m(ids).logits
    torch.testing.assert_close(chunked_logits(m, ids, chunk=4), full, rtol=1e-5, atol=1e-5)
    some = chunked_logits(m, ids, chunk=7, positions=[T - 1, 0, 5])
    torch.testing.assert_close(some, full[:, [T - 1, 0, 5]], rtol=1e-5, atol=1e-5)


def test_the_learned_table_and_bad_inputs_are_refused_in_one_line():
    m = _llama("learned")
    ids = torch.zeros(1, position_limit(m) + 1, dtype=torch.long)
    with pytest.raises(TaskConfigError, match=r"covers 10 positions, not 11: use a scheme"):
        chunked_logits(m, ids)
    with pytest.raises(TaskConfigError, match=r"positions must be"):
        chunked_logits(_llama("bam"), ids, positions=[11])
    with pytest.raises(TaskConfigError, match="BAM options"):
        build_llama(TASK, get_preset("tiny"), "alibi", bam_shared=True)
    with pytest.raises(TaskConfigError, match="not position scheme 'rope'"):
        read_priors(_llama("rope"))


@pytest.mark.parametrize("arch", ["llama-bam", "llama-alibi"])
def test_trains_saves_and_reloads_with_the_same_logits(tmp_path, arch):
    cfg = TrainConfig(task="bijection", task_params={"V": 6}, arch=arch, preset="tiny",
                      steps=4, batch_size=8, warmup_steps=1, eval_every=4, eval_size=4,
                      final_eval_size=4, ckpt_every=4, lr=3e-2)
    train(cfg, tmp_path / "run", progress=False)
    run = load_run(tmp_path / "run")
    back = AutoModelForCausalLM.from_pretrained(tmp_path / "run" / "model").eval()
    assert back.config.position_scheme == arch.split("-")[1]
    with torch.no_grad():
        assert torch.equal(run.model.eval()(IDS).logits, back(IDS).logits)
    if arch == "llama-bam":  # the prior trained (θβ gets a gradient from the start)
        assert all(p.theta_beta.abs().max() > 0 for p in _priors(back))


def test_a_shared_prior_is_one_prior_and_round_trips(tmp_path):
    m = _llama("bam", bam_shared=True, bam_learn_mu=True)
    shared = m.model.position_prior
    assert all(p is shared for p in _priors(m)) and len(list(shared.parameters())) == 3
    _set(shared, alpha=[0.2, -0.4], beta=[1.0, 2.0], mu=[0.3, 0.0])
    m.save_pretrained(tmp_path)
    back = AutoModelForCausalLM.from_pretrained(tmp_path).eval()
    assert all(p is back.model.position_prior for p in _priors(back))
    with torch.no_grad():
        assert torch.equal(back(IDS).logits, m(IDS).logits)
    np.testing.assert_allclose(read_priors(back).mu[1], 2 * np.sinh([0.3, 0.0]), rtol=1e-6)


def test_gradient_taps_see_the_prior_and_the_routing_law_holds():
    hf = _llama("bam", sharpen=4.0).double()
    priors = _priors(hf)
    for prior in priors:
        _set(prior, alpha=[0.4, -0.3], beta=[1.5, 0.5])
    m = interp.InterpModel(hf, task=TASK)
    batch = TASK.sample(3, np.random.default_rng(0))
    g = attention_gradients(m, loss_fn=lambda: task_loss(hf, TASK, batch))
    eager = _attentions(hf, batch.input_ids)
    T = batch.input_ids.shape[1]
    d = key_distances(T, T, dtype=torch.float64)
    task_loss(hf, TASK, batch).backward()
    for L, t in g.layers.items():
        # the taps' α is the model's, and is softmax(c q·k + B) by hand, not softmax(c q·k)
        torch.testing.assert_close(t.pattern, eager[L], rtol=1e-6, atol=1e-9)
        s = t.scaling * t.q @ t.k.transpose(-1, -2)
        bias = priors[L](d)
        by_hand = torch.softmax((s + bias).masked_fill(d < 0, -math.inf), -1)
        torch.testing.assert_close(t.pattern, by_hand, rtol=1e-6, atol=1e-9)
        assert (torch.softmax(s.masked_fill(d < 0, -math.inf), -1) - t.pattern).abs().max() > 1e-3
        A, b = t.pattern.numpy(), rl.compatibilities(t.z_grad.numpy(), t.v.numpy(), [0, 1])
        err = rl.relative_error(rl.score_gradient(A, b), t.score_grad.numpy())
        assert float(np.max(err)) <= 1e-6
        # ∂L/∂θα_h = Σ_ij ∂L/∂s_ij · B_ij: the prior sits where the taps' probe does
        want = (t.score_grad * bias.detach().masked_fill(d < 0, 0)).sum((0, 2, 3))
        torch.testing.assert_close(priors[L].theta_alpha.grad, want, rtol=1e-6, atol=1e-12)


@pytest.mark.parametrize("options", [{}, {"bam_shared": True, "ssmax": True}])
def test_the_readout_is_the_prior_the_attention_applies(options):
    m = _llama("bam", **options)
    for prior in _priors(m):
        _set(prior, alpha=[0.3, -1.0], beta=[2.0, 0.5])
    D = 8
    r = read_priors(m, max_distance=D)
    assert r.bias.shape == r.prior.shape == (2, 2, D + 1) and r.shared == bool(options)
    np.testing.assert_allclose(r.theta_beta, [[2.0, 0.5]] * 2)
    np.testing.assert_allclose(r.prior.sum(-1), 1.0, rtol=1e-12)
    # with no content (q = 0) the last of D + 1 queries attends by the prior alone
    with torch.no_grad():
        for layer in m.model.layers:
            layer.self_attn.q_proj.weight.zero_()
        ids = torch.randint(0, TASK.vocab_size, (1, D + 1))
        att = m(ids, output_attentions=True).attentions
    for L in range(2):
        np.testing.assert_allclose(att[L][0, :, -1].flip(-1).double().numpy(), r.prior[L],
                                   rtol=1e-5, atol=1e-7)
    frame = r.params_frame()
    assert list(frame["prior_mode"]) == [0] * 4 and len(r.frame()) == 2 * 2 * (D + 1)
    nope = read_priors(_llama("nope"), 3)
    np.testing.assert_allclose(nope.prior, 0.25)
    torch.testing.assert_close(alibi_bias(torch.arange(3.0), 2)[1], -torch.arange(3.0) / 256)
