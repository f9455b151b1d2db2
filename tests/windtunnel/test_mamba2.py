"""Mamba-2 (arch ``mamba2``): the quadratic SSD forward equals HF's chunked one (outputs and
gradients, left padding included), its sizes, and a saved run reopening with the fast mixer."""

import copy

import pytest
import torch
from transformers import Mamba2ForCausalLM
from transformers.models.mamba2.modeling_mamba2 import Mamba2Mixer

from bayesgeom.windtunnel import make_task
from bayesgeom.windtunnel.architectures import build_model, check_batch_memory, n_params
from bayesgeom.windtunnel.checkpoint import load_model
from bayesgeom.windtunnel.mamba2 import (
    SSDMixer,
    causal_depthwise_conv,
    mamba2_config,
    mamba2_heads,
    mamba2_params,
    segment_sum,
    use_ssd,
)
from bayesgeom.windtunnel.task import TaskConfigError


@pytest.fixture(scope="module")
def pair():
    """HF's Mamba-2 and the same weights with the SSD mixer; larger time steps than at
    initialisation (so the decays matter) and T = 21 over HF's chunk of 8 (three chunks)."""
    torch.manual_seed(0)
    ref = Mamba2ForCausalLM(mamba2_config(12, 32, 2, 2, chunk_size=8))
    with torch.no_grad():
        for layer in ref.backbone.layers:
            layer.mixer.dt_bias.add_(1.5)
    return ref, use_ssd(copy.deepcopy(ref))


def test_ssd_forward_and_gradients_equal_hfs(pair):
    ref, fast = pair
    assert all(type(layer.mixer) is SSDMixer for layer in fast.backbone.layers)
    assert all(type(layer.mixer) is Mamba2Mixer for layer in ref.backbone.layers)
    ids = torch.randint(0, 12, (3, 21), generator=torch.Generator().manual_seed(1))
    a, b = ref(ids, output_hidden_states=True), fast(ids, output_hidden_states=True)
    torch.testing.assert_close(b.logits, a.logits, atol=1e-5, rtol=1e-5)
    for x, y in zip(a.hidden_states, b.hidden_states, strict=True):
        torch.testing.assert_close(y, x, atol=1e-5, rtol=1e-5)
    a.logits.square().sum().backward()
    b.logits.square().sum().backward()
    for (name, p), (_, q) in zip(ref.named_parameters(), fast.named_parameters(), strict=True):
        torch.testing.assert_close(q.grad, p.grad, atol=1e-4, rtol=1e-4, msg=name)


def test_left_padding_equals_the_unpadded_prompt(pair):
    _, fast = pair
    ids = torch.randint(0, 12, (2, 9), generator=torch.Generator().manual_seed(2))
    pad = torch.zeros(2, 4, dtype=torch.long)
    mask = torch.cat([pad, torch.ones_like(ids)], 1)
    with torch.no_grad():
        alone = fast(ids).logits
        padded = fast(torch.cat([pad, ids], 1), attention_mask=mask).logits[:, 4:]
    torch.testing.assert_close(padded, alone, atol=1e-5, rtol=1e-5)


def test_the_pieces_match_their_definitions():
    a = torch.randn(2, 6)
    seg = segment_sum(a)
    t, s = 4, 1
    assert seg[0, t, s] == pytest.approx(float(a[0, s + 1:t + 1].sum()), abs=1e-6)
    assert float(seg[0, t, t]) == 0 and seg[0, s, t] == float("-inf")
    x, w, bias = torch.randn(2, 7, 5), torch.randn(5, 1, 4), torch.randn(5)
    out = causal_depthwise_conv(x, w, bias)
    by_hand = bias + sum(w[:, 0, j] * x[:, 6 - 3 + j] for j in range(4))
    torch.testing.assert_close(out[:, 6], by_hand)


def test_sizes_heads_and_count():
    assert mamba2_heads(88) == 2 and mamba2_heads(90) == 3 and mamba2_heads(268) == 8
    with torch.device("meta"):
        m = Mamba2ForCausalLM(mamba2_config(40, 88, 2, 2))
    assert n_params(m) == mamba2_params(40, 88, 2, 2)
    with pytest.raises(ValueError, match="not divisible"):
        mamba2_config(40, 88, 2, 3)


def test_built_arch_is_deterministic_and_memory_is_checked():
    t = make_task("bijection", V=6)
    m1, m2 = build_model(t, "mamba2", "tiny", seed=4), build_model(t, "mamba2", "tiny", seed=4)
    assert type(m1.backbone.layers[0].mixer) is SSDMixer
    for p, q in zip(m1.parameters(), m2.parameters(), strict=True):
        assert torch.equal(p, q)
    with pytest.raises(TaskConfigError, match="the SSD"):
        check_batch_memory(make_task("assoc_recall"), "mamba2", "paper", 10**6, 1)


def test_a_saved_model_reopens_with_the_ssd_mixer(tmp_path):
    m = build_model(make_task("hmm", K=6), "mamba2", "tiny", seed=1).eval()
    m.save_pretrained(tmp_path)
    back = load_model(tmp_path)
    assert type(back.backbone.layers[0].mixer) is SSDMixer
    ids = torch.randint(0, m.config.vocab_size, (2, 6))
    with torch.no_grad():
        torch.testing.assert_close(back(ids).logits, m(ids).logits)


def test_layer_geometry_runs_on_a_mamba2_run_with_its_twin(tmp_path):
    from bayesgeom.analyses.layer_geometry.run import LayerGeometryConfig, run_layer_geometry
    from bayesgeom.windtunnel.training import TrainConfig, train

    cfg = TrainConfig(task="hmm", task_params={"K": 6}, arch="mamba2", preset="tiny", steps=2,
                      batch_size=4, warmup_steps=1, eval_every=2, eval_size=2,
                      final_eval_size=4, ckpt_every=2, seed=1)
    train(cfg, tmp_path / "run", progress=False)
    res = run_layer_geometry(LayerGeometryConfig(model=str(tmp_path / "run"), out=tmp_path / "lg",
                                                 n_sequences=12, progress=False))
    assert res.arch == "mamba2" and res.n_layers == 2 and res.twin_seed == 1
