"""Per-head W_K read through the ``attn.L.k`` projection, for every family layout."""

from __future__ import annotations

import numpy as np
import pytest
import torch

import interp
from analyses.key_weights import all_key_weights, key_weights
from interp.qkv_layout import split_fused
from probes import split_key_weight


def _keys_from_weights(model: interp.InterpModel, layer: int, x: torch.Tensor) -> np.ndarray:
    """Keys [n, Hkv, dh] of inputs x [n, D] through the extracted W_K plus the bias."""
    site = model.resolve_sites(f"attn.{layer}.k")[0]
    module, _ = model.modules.projection(site)
    w = key_weights(model, layer)  # [Hkv, D, dh]
    with torch.no_grad():
        zero = module(torch.zeros(1, x.shape[1]))
    ad, g = model.modules.adapter, model.geometry
    bias = (split_fused(zero, 1, ad.qkv_layout, g.n_heads) if ad.qkv else
            zero.unflatten(-1, (w.shape[0], g.d_head)))[0].double().numpy()
    return np.einsum("nd,hdk->nhk", x.double().numpy(), w) + bias


@pytest.mark.parametrize("family", ["gpt_neox", "phi", "llama", "mistral"])
def test_key_weights_reproduce_the_captured_keys(text_models, family):
    """The keys the ``attn.1.k`` site captures equal (input of the projection) @ W_K + b."""
    model = interp.load(text_models[family])
    site = model.resolve_sites("attn.1.k")[0]
    module, _ = model.modules.projection(site)
    seen = {}
    h = module.register_forward_pre_hook(lambda m, args: seen.__setitem__("x", args[0][0, -1]))
    try:
        store = interp.capture(model, ["The capital of France is"], ["attn.1.k"], progress=False)
    finally:
        h.remove()
    want = store["attn.1.k"].double().numpy()  # [1, Hkv, dh]
    got = _keys_from_weights(model, 1, seen["x"][None].float())
    np.testing.assert_allclose(got, want, atol=1e-5)


def test_key_weights_match_the_k_proj_weight_under_gqa(text_models):
    model = interp.load(text_models["llama"])
    w = model.hf.model.layers[0].self_attn.k_proj.weight.detach()
    ref = split_key_weight(w.numpy(), model.geometry.n_kv_heads)
    got = key_weights(model, 0)
    assert got.shape == (2, 32, 8)
    np.testing.assert_allclose(got, ref, atol=1e-6)
    assert len(all_key_weights(model)) == model.n_layers


def test_key_weights_of_the_wind_tunnel_transformer(tmp_path):
    from windtunnel import make_task
    from windtunnel.architectures import build_model

    build_model(make_task("bijection", V=6), "transformer", "tiny", seed=0).save_pretrained(
        tmp_path / "m")
    model = interp.load(tmp_path / "m")
    c_attn = model.hf.transformer.h[1].attn.c_attn  # Conv1D: weight [D, 3·H·dh] = [q | k | v]
    d = c_attn.weight.shape[0]
    ref = c_attn.weight.detach().double().numpy()[:, d: 2 * d]
    ref = ref.reshape(d, model.geometry.n_heads, -1).transpose(1, 0, 2)
    np.testing.assert_allclose(key_weights(model, 1), ref, atol=1e-6)
