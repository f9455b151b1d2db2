"""Per-head projection weights read through the same layouts that split the activations, for
every family layout (separate, NeoX per-head, GPT-2 Conv1D blocks, Phi-3 GQA blocks), and the
weights digest that keys every cache."""

from __future__ import annotations

import pytest
import torch

from bayesgeom import interp
from bayesgeom.interp import projection_weights

LAYOUT_FAMILIES = ["gpt_neox", "phi", "llama", "mistral", "phi3", "windtunnel"]


@pytest.fixture(scope="module")
def models(tiny_models):
    return {name: interp.load(tm.path) for name, tm in tiny_models.items()}


@pytest.mark.parametrize("family", LAYOUT_FAMILIES)
@pytest.mark.parametrize("which", ["q", "k", "v"])
def test_weights_reproduce_the_captured_activations(family, which, models, family_prompts):
    """The ``attn.1.{q,k,v}`` site equals (input of the projection) @ W + b, head by head."""
    m = models[family]
    site = m.resolve_sites(f"attn.1.{which}")[0]
    module, _, _ = m.modules.projection(site)
    seen = {}
    h = module.register_forward_pre_hook(lambda _m, args: seen.__setitem__("x", args[0][0, -1]))
    try:
        store = interp.capture(m, [family_prompts[family][0]], [site.name], progress=False)
    finally:
        h.remove()
    w, b = projection_weights(m, site.name)
    n = m.geometry.n_heads if which == "q" else m.geometry.n_kv_heads
    assert w.shape == (n, m.d_model, m.geometry.d_head) and b.shape == (n, m.geometry.d_head)
    got = torch.einsum("d,hdk->hk", seen["x"].double(), w) + b
    torch.testing.assert_close(got, store[site.name][0].double(), atol=1e-5, rtol=0)


def test_gqa_key_weights_are_the_k_proj_rows_by_head(models):
    m = models["llama"]
    wk = m.hf.model.layers[0].self_attn.k_proj.weight.detach().double()  # [Hkv·dh, D]
    w, b = projection_weights(m, "attn.0.k")
    torch.testing.assert_close(w, wk.view(2, 8, 32).transpose(1, 2))
    assert float(b.abs().max()) == 0.0  # Llama's projections have no bias


def test_only_projection_sites_have_weights(models):
    with pytest.raises(interp.InterpError, match=r"attn\.L\.q, attn\.L\.k or attn\.L\.v"):
        projection_weights(models["llama"], "resid_post.0")


def test_the_weights_digest_sees_any_change(tiny_models):
    a = interp.load(tiny_models["llama"].path)
    b = interp.load(tiny_models["llama"].path)
    assert a.weights_digest() == b.weights_digest()
    layers = b.hf.model.layers
    with torch.no_grad():  # swap two layers' weights in place: same sums, same count
        for p0, p1 in zip(layers[0].parameters(), layers[1].parameters(), strict=True):
            tmp = p0.clone()
            p0.copy_(p1)
            p1.copy_(tmp)
    assert a.weights_digest() != b.weights_digest()
