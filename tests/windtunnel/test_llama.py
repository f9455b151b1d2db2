"""The Llama-style wind-tunnel transformer: the paper's parameter count, the positional schemes
(learned / RoPE / none / ALiBi / BAM), save and reload, and training through the same loop.
BAM's special cases, chunked evaluation and the prior readout: test_position_priors.py."""

import json
import math

import pytest
import torch
from transformers import AutoModelForCausalLM

from bayesgeom import interp
from bayesgeom.analyses.kit.models import open_model
from bayesgeom.windtunnel import TaskConfigError, load_run, make_task
from bayesgeom.windtunnel.arch_registry import ARCH_NAMES
from bayesgeom.windtunnel.architectures import activation_bytes, arch_sizes, build_model, n_params
from bayesgeom.windtunnel.evaluate import evaluate
from bayesgeom.windtunnel.llama import (
    WindTunnelLlama,
    WindTunnelLlamaConfig,
    build_llama,
    llama_config,
    llama_params,
)
from bayesgeom.windtunnel.training import TrainConfig, train
from bayesgeom.windtunnel.transformer import get_preset, transformer_params

from ..conftest import assert_left_padding_ignored

PAPER_PARAMS = 2_677_440  # spec §1.5: the bijection production model
LLAMA_ARCHS = {"llama": "learned", "llama-rope": "rope", "llama-nope": "nope",
               "llama-alibi": "alibi", "llama-bam": "bam", "llama-bam-ssmax": "bam"}
OPTIONS = {"llama-bam-ssmax": {"ssmax": True}}
BASE_SCHEMES = ("learned", "rope", "nope")


def test_paper_preset_has_the_papers_exact_count():
    t = make_task("bijection", V=20)
    with torch.device("meta"):
        got = {a: n_params(build_model(t, a, "paper")) for a in LLAMA_ARCHS}
    # 6 x (4·192² + 2·192·768 + 768 + 192 + 2·192) + 40·192 + 38·192 + 192
    assert 6 * (4 * 192**2 + 2 * 192 * 768 + 768 + 192 + 2 * 192) + 78 * 192 + 192 \
        == got["llama"] == PAPER_PARAMS
    # no position table: 38 · 192 fewer; ALiBi has no parameters
    assert got["llama-rope"] == got["llama-nope"] == got["llama-alibi"] \
        == PAPER_PARAMS - 38 * 192 == 2_670_144
    # BAM: θα, θβ per head and layer (6 · 2 · 6); SSMax: σ per head and layer (6 · 6)
    assert got["llama-bam"] == 2_670_144 + 72 and got["llama-bam-ssmax"] == 2_670_144 + 108
    with torch.device("meta"):
        shared = build_llama(t, get_preset("paper"), "bam", bam_shared=True, bam_learn_mu=True)
    assert n_params(shared) == 2_670_144 + 3 * 6 == llama_params(
        40, 38, get_preset("paper"), "bam", bam_shared=True, bam_learn_mu=True)


@pytest.mark.parametrize(("task", "params"), [("bijection", {"V": 20}), ("hmm", {})])
@pytest.mark.parametrize("preset", ["tiny", "small", "paper", "paper-hmm"])
def test_counts_follow_the_formula(task, params, preset):
    t = make_task(task, **params)
    for arch, scheme in LLAMA_ARCHS.items():
        with torch.device("meta"):
            m = build_model(t, arch, preset)
        assert n_params(m) == llama_params(t.vocab_size, t.max_seq_len + 1, get_preset(preset),
                                           scheme, **OPTIONS.get(arch, {}))
        assert m.config.position_scheme == scheme and m.config._attn_implementation == "eager"


def test_paper_hmm_preset_is_the_spec_hmm_model_and_baselines_match_it():
    p = get_preset("paper-hmm")
    assert (p.n_layer, p.n_head, p.d_model, p.d_ff) == (9, 8, 256, 1024)
    t = make_task("hmm")
    target = transformer_params(t, "paper-hmm")
    with torch.device("meta"):
        for arch in ("mlp-position", "mlp-flat", "lstm", "mamba", "mamba2"):
            got = n_params(build_model(t, arch, "paper-hmm"))
            assert abs(got - target) / target <= 0.02, arch
    assert arch_sizes(t, "lstm", "paper-hmm")["n_layer"] == 9
    assert activation_bytes(t, "llama", "paper-hmm", 2) == activation_bytes(
        t, "transformer", "paper-hmm", 2) > 0


def _same_weights(t, preset="tiny"):
    """The three schemes with one set of shared weights (the table zeroed for 'learned')."""
    models = {s: build_llama(t, get_preset(preset), s).eval() for s in BASE_SCHEMES}
    shared = {k: v for k, v in models["nope"].state_dict().items()}
    for s in ("learned", "rope"):
        missing, unexpected = models[s].load_state_dict(shared, strict=False)
        assert unexpected == [] and missing == (["model.wpe.weight"] if s == "learned" else [])
    return models


def test_learned_with_a_zero_table_is_nope_bit_for_bit_and_rope_differs():
    t = make_task("bijection", V=6)
    m = _same_weights(t)
    ids = t.sample(3, 0).input_ids
    with torch.no_grad():
        base = m["nope"](ids, output_attentions=True, output_hidden_states=True)
        m["learned"].wpe.weight.zero_()
        zero = m["learned"](ids, output_attentions=True, output_hidden_states=True)
        rope = m["rope"](ids, output_attentions=True).attentions[0]
        m["learned"].wpe.weight.normal_(std=0.5)
        learned = m["learned"](ids).logits
    assert torch.equal(base.logits, zero.logits)
    assert all(torch.equal(a, b) for a, b in zip(base.attentions, zero.attentions, strict=True))
    assert all(torch.equal(a, b) for a, b in zip(base.hidden_states, zero.hidden_states,
                                                 strict=True))
    assert base.attentions[0].shape == (3, 2, t.seq_len, t.seq_len)
    assert (rope - base.attentions[0]).abs().max() > 1e-4
    assert (learned - base.logits).abs().max() > 1e-4


def test_nope_sees_order_only_through_the_causal_mask():
    # without positions, the first block's output at the last token is a function of the set of
    # earlier tokens: permuting them leaves it unchanged (with RoPE it changes)
    t = make_task("bijection", V=6)
    ids = t.sample(1, 0).input_ids[:, :7]
    perm = torch.tensor([3, 0, 5, 1, 4, 2, 6])
    out = {}
    for arch in ("llama-nope", "llama-rope"):
        m = build_model(t, arch, "tiny", seed=2).eval()
        with torch.no_grad():
            attn = m.model.layers[0].self_attn
            attn.q_proj.weight.mul_(10)  # sharper attention than at initialisation
            attn.k_proj.weight.mul_(10)
            out[arch] = [m(x, output_hidden_states=True).hidden_states[1][0, -1]
                         for x in (ids, ids[:, perm])]
    torch.testing.assert_close(*out["llama-nope"])
    assert (out["llama-rope"][0] - out["llama-rope"][1]).abs().max() > 1e-3


@pytest.mark.parametrize("arch", LLAMA_ARCHS)
def test_left_padding_with_positions_from_the_mask_equals_unpadded(arch):
    t = make_task("bijection", V=6)
    m = build_model(t, arch, "tiny", seed=1).eval()
    with torch.no_grad():
        for name, p in m.named_parameters():  # a prior that is not NoPE, an SSMax that is not 1
            if "theta" in name or "ssmax" in name:
                p.uniform_(0.5, 1.5)
    assert_left_padding_ignored(m, t.sample(1, 0).input_ids[:, :7])


def test_saves_and_loads_through_auto_classes_with_eager_attention(tmp_path):
    t = make_task("bijection", V=6)
    m = build_model(t, "llama", "tiny", seed=3).eval()
    m.save_pretrained(tmp_path)
    cfg = json.loads((tmp_path / "config.json").read_text())
    assert cfg["model_type"] == "bayesgeom_llama" and cfg["position_scheme"] == "learned"
    back = AutoModelForCausalLM.from_pretrained(tmp_path).eval()
    assert isinstance(back, WindTunnelLlama) and back.config._attn_implementation == "eager"
    assert back.lm_head.weight is back.model.embed_tokens.weight
    ids = t.sample(2, 0).input_ids
    with torch.no_grad():
        assert torch.equal(back(ids).logits, m(ids).logits)


def test_bad_schemes_and_positions_are_refused():
    t = make_task("bijection", V=6)
    with pytest.raises(TaskConfigError, match="unknown position scheme 'sinusoidal'"):
        llama_config(t, get_preset("tiny"), "sinusoidal")
    with pytest.raises(Exception, match="unknown position_scheme"):
        WindTunnelLlamaConfig(position_scheme="sinusoidal")
    with pytest.raises(Exception, match="are BAM options"):
        WindTunnelLlamaConfig(position_scheme="alibi", bam_shared=True)
    with pytest.raises(TaskConfigError, match="positions cannot hold"):
        llama_config(t, get_preset("tiny"), n_positions=t.max_seq_len - 1)
    m = build_llama(t, get_preset("tiny"), n_positions=t.max_seq_len)
    n = t.max_seq_len
    with pytest.raises(ValueError, match=f"position {n} exceeds the {n} learned positions"):
        m(torch.zeros(1, n + 1, dtype=torch.long))


@pytest.mark.parametrize("arch", LLAMA_ARCHS)
def test_trains_saves_reloads_and_opens_with_interp(tmp_path, arch):
    cfg = TrainConfig(task="bijection", task_params={"V": 6}, arch=arch, preset="tiny", steps=3,
                      batch_size=4, warmup_steps=1, eval_every=2, eval_size=4,
                      final_eval_size=8, ckpt_every=2)
    res = train(cfg, tmp_path / "run", progress=False)
    assert math.isfinite(res.report.entropy_mae_bits)
    run = load_run(tmp_path / "run")
    assert isinstance(run.model, WindTunnelLlama) and run.arch == arch
    assert res.params == n_params(run.model) > 0
    # the reloaded model reproduces the final evaluation, logit lens included
    rep = evaluate(run.model, run.task, cfg.final_eval_size, cfg.seed)
    assert rep.entropy_mae_bits == pytest.approx(res.report.entropy_mae_bits, abs=1e-6)
    assert len(rep.per_layer["kl_bits"]) == 2
    assert open_model(tmp_path / "run").info.family == "llama"
    hooked = interp.load(str(tmp_path / "run" / "model"))
    assert hooked.info.family == "llama" and hooked.geometry.heads == (2, 2, 16)
    ids = run.task.sample(2, 0).input_ids
    T = ids.shape[1]
    st = interp.capture(hooked, ids, ["resid_post.0", "resid_post.-1", "attn.0.pattern"],
                        positions="all", progress=False)
    assert st["resid_post.0"].shape == st["resid_post.1"].shape == (ids.numel(), 32)
    pattern = st["attn.0.pattern"]
    assert pattern.shape[-2:] == (2, T) and pattern.shape[0] == ids.numel()
    torch.testing.assert_close(pattern.sum(-1), torch.ones(pattern.shape[:-1]))


def test_archs_are_registered():
    assert set(LLAMA_ARCHS) <= set(ARCH_NAMES)
