"""Paper II's identities (spec §2.2) between the taps' autograd gradients and their predictions,
in float64, on a single-head model, a GQA Llama and a multi-head causal wind tunnel."""

from __future__ import annotations

import itertools

import numpy as np
import pytest
import torch
from transformers import GPT2Config, GPT2LMHeadModel, LlamaConfig, LlamaForCausalLM

from bayesgeom import interp
from bayesgeom.interp.attention_taps import (
    TAPS_IMPLEMENTATION,
    attention_gradients,
    loss_after_value_step,
    next_token_loss,
)
from bayesgeom.probes import routing_law as rl
from bayesgeom.windtunnel import make_token_task
from bayesgeom.windtunnel.architectures import build_model
from bayesgeom.windtunnel.training import task_loss

TOL = 1e-6  # the fp64 bound; GPT-2 reaches ~1e-15, Llama's float32 softmax ~1e-7


def _single_head() -> interp.InterpModel:
    torch.manual_seed(1)
    cfg = GPT2Config(n_layer=1, n_head=1, n_embd=12, vocab_size=13, n_positions=16)
    return interp.InterpModel(GPT2LMHeadModel(cfg).double())


def _gqa_llama() -> interp.InterpModel:
    torch.manual_seed(2)
    cfg = LlamaConfig(num_hidden_layers=2, num_attention_heads=4, num_key_value_heads=2,
                      hidden_size=32, intermediate_size=48, vocab_size=13)
    return interp.InterpModel(LlamaForCausalLM(cfg).double())


def _np(x: torch.Tensor) -> np.ndarray:
    return x.numpy().astype(np.float64)


def _errors(g: interp.attention_taps.AttentionGradients) -> dict[str, float]:
    """The largest relative error of each identity over layers and heads."""
    geo, out = g.geometry, {}
    for t in g.layers.values():
        kvq = geo.kv_head_of_query
        A, U, V = _np(t.pattern), _np(t.z_grad), _np(t.v)
        gs_auto = _np(t.score_grad)
        b = rl.compatibilities(U, V, kvq)
        errs = {
            "dL/dalpha = b": rl.relative_error(b, _np(t.pattern_grad)),
            "routing law": rl.relative_error(rl.score_gradient(A, b), gs_auto),
            "value gradient": rl.relative_error(
                rl.value_gradient(A, U, kvq, geo.n_kv_heads), _np(t.v_grad)),
            "query gradient": rl.relative_error(
                rl.query_gradient(gs_auto, _np(t.k), t.scaling, kvq), _np(t.q_grad)),
            "key gradient": rl.relative_error(
                rl.key_gradient(gs_auto, _np(t.q), t.scaling, kvq, geo.n_kv_heads),
                _np(t.k_grad)),
            "row sums": np.abs(gs_auto.sum(-1)).max() / np.abs(gs_auto).max(),
        }
        for k, e in errs.items():
            out[k] = max(out.get(k, 0.0), float(np.max(e)))
    return out


def test_identities_on_a_random_single_head_model_with_padding():
    m = _single_head()
    batch = m.batch([[1, 2, 3, 4, 5, 6, 7], [3, 4, 5], [8, 8, 9, 1, 2]])
    g = attention_gradients(m, batch)
    errs = _errors(g)
    assert max(errs.values()) <= TOL, errs
    t = g.layers[0]
    A, gs = _np(t.pattern), _np(t.score_grad)
    allowed = np.broadcast_to(t.allowed.numpy(), A.shape)
    real_rows = np.broadcast_to(allowed.any(-1, keepdims=True), A.shape)
    masked = real_rows & ~allowed  # causal and padding entries of real query rows
    assert masked.sum() > 0 and A[masked].max() == 0 and np.abs(gs[masked]).max() == 0
    assert g.loss == pytest.approx(float(next_token_loss(m, batch).detach()))


def test_identities_on_a_tiny_gqa_llama():
    m = _gqa_llama()
    assert m.geometry.n_heads == 4 and m.geometry.n_kv_heads == 2
    # left padding: fully masked pad rows stay finite under Llama's float32 softmax
    g = attention_gradients(m, m.batch([[1, 2, 3, 4, 5, 6], [6, 5, 4, 3]]))
    errs = _errors(g)
    assert max(errs.values()) <= TOL, errs
    assert g.layers[1].k.shape == (2, 2, 6, 8) and g.layers[1].q.shape == (2, 4, 6, 8)


def test_identities_on_a_multi_head_wind_tunnel_with_its_soft_target_loss():
    task = make_token_task("hmm")
    hf = build_model(task, "transformer", "tiny", seed=0).double()
    m = interp.InterpModel(hf, task=task)
    batch = task.sample(4, np.random.default_rng(0))
    g = attention_gradients(m, loss_fn=lambda: task_loss(hf, task, batch))
    assert task.soft_targets and len(g.layers) == 2 and g.geometry.n_heads == 2
    errs = _errors(g)
    assert max(errs.values()) <= TOL, errs


def test_value_step_decrease_ratio_tends_to_one():
    m = _single_head()
    batch = m.batch([[1, 2, 3, 4, 5, 6, 7], [3, 4, 5, 6, 7, 8, 9]])
    g = attention_gradients(m, batch)
    gv = g.layers[0].v_grad
    sq = float((gv ** 2).sum())
    gaps = []
    for eps in (1e-1, 1e-2, 1e-3, 1e-4):
        eta = eps * g.loss / sq
        after = loss_after_value_step(m, lambda: next_token_loss(m, batch), 0, -eta * gv)
        gaps.append(abs(1 - rl.first_order_ratio(g.loss, after, eta, sq)))
    assert all(b < a for a, b in itertools.pairwise(gaps)), gaps
    assert gaps[-1] < 1e-3, gaps


def test_feedback_after_a_value_step_matches_the_formula():
    m = _single_head()
    g = attention_gradients(m, m.batch([[1, 2, 3, 4, 5, 6], [7, 8, 9, 1, 2, 3]]))
    t = g.layers[0]
    A, U, eta = _np(t.pattern), _np(t.z_grad), 0.3
    measured = U @ np.swapaxes(-eta * _np(t.v_grad), -1, -2)  # u_i . (v'_j - v_j)
    assert rl.relative_error(rl.feedback_change(A, U, eta, (0,), 1), measured).max() <= TOL
    one_head = -eta * (U @ np.swapaxes(U, -1, -2)) @ A  # the spec's single-head form
    assert rl.relative_error(one_head, measured).max() <= TOL
    # the self-term -eta alpha_jj |u_j|^2 of each diagonal entry is never positive
    diag = np.einsum("nhii->nhi", A) * (U ** 2).sum(-1)
    assert (-eta * diag <= 0).all()


def test_taps_agree_with_the_capture_sites_and_leave_the_model_as_it_was():
    m = _gqa_llama()
    hf = m.hf
    hf.set_attn_implementation("sdpa")
    hf.train()
    batch = m.batch([[1, 2, 3, 4], [5, 6, 7, 8]])
    g = attention_gradients(m, batch, layers=[-1])
    assert list(g.layers) == [1]
    assert hf.config._attn_implementation == "sdpa" and hf.training
    assert all(p.grad is None for p in hf.parameters())
    seen: dict[str, torch.Tensor] = {}

    def keep(name):
        return lambda x: seen.update({name: x.clone()})  # returns None: read only

    with m.hooks([("attn.1.z", keep("z")), ("attn.1.pattern", keep("pattern")),
                  ("attn.1.v", keep("v"))]):
        m.forward(batch, eager=True)
    t = g.layers[1]
    torch.testing.assert_close(seen["pattern"], t.pattern)
    torch.testing.assert_close(seen["z"], t.z.transpose(1, 2))
    torch.testing.assert_close(seen["v"], t.v.transpose(1, 2))
    assert hf.config._attn_implementation != TAPS_IMPLEMENTATION


@pytest.mark.parametrize("dtype", [torch.float16, torch.bfloat16, torch.float32])
def test_the_allowed_mask_is_causal_in_every_dtype(dtype):
    torch.manual_seed(3)
    cfg = LlamaConfig(num_hidden_layers=1, num_attention_heads=2, num_key_value_heads=1,
                      hidden_size=16, intermediate_size=16, vocab_size=13)
    m = interp.InterpModel(LlamaForCausalLM(cfg).to(dtype))
    t = attention_gradients(m, m.batch([[1, 2, 3, 4], [5, 6]])).layers[0]
    allowed = t.allowed.numpy()[:, 0]  # [B, T, T]
    causal = np.tril(np.ones((4, 4), dtype=bool))
    assert (allowed[0] == causal).all()
    assert (allowed[1] == causal & np.array([False, False, True, True])).all()  # left padding


def test_frozen_weights_still_give_gradients():
    m = _single_head()
    for p in m.hf.parameters():
        p.requires_grad_(False)
    g = attention_gradients(m, m.batch([[1, 2, 3, 4, 5]]))
    assert float(g.layers[0].z_grad.abs().max()) > 0
    assert max(_errors(g).values()) <= TOL


def test_bad_inputs_are_one_line_errors():
    m = _single_head()
    with pytest.raises(interp.InterpError, match="scalar"):
        attention_gradients(m, loss_fn=lambda: torch.ones(2, requires_grad=True))
    with pytest.raises(interp.InterpError, match="batch or a loss_fn"):
        attention_gradients(m)
    with pytest.raises(interp.UnknownSiteError, match="layer 3 does not exist"):
        attention_gradients(m, m.batch([[1, 2, 3]]), layers=[3])
    with pytest.raises(interp.InterpError, match="at least two tokens"):
        attention_gradients(m, m.batch([[1]]))


@pytest.mark.parametrize("family", ["gpt_neox", "phi", "phi3", "mistral"])
def test_the_taps_serve_every_attention_family(family, tiny_models):
    """The other HF families' own eager kernels (Mistral with a sliding window of 3, Phi-3's fused
    q/k/v under GQA), loaded in float64: the identities hold to their float32 softmax."""
    m = interp.load(tiny_models[family].path, dtype="float64")
    g = attention_gradients(m, m.batch([[1, 2, 3, 4, 5, 6, 7], [8, 9, 10, 11, 12, 13, 14]]))
    errs = _errors(g)
    assert max(errs.values()) <= TOL, errs
