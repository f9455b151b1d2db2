"""Resuming a forward pass at a layer (same logits as a full pass, hooks at and after the layer
apply, the model is restored) and the frozen final norm (identity on a clean pass; direct equals
total effect for an edit the norm cannot see; differs for one it can)."""

from __future__ import annotations

import pytest
import torch

from bayesgeom import interp
from bayesgeom.interp import ProjectOut, ShiftAlong
from bayesgeom.interp.errors import InterpError
from bayesgeom.interp.layer_resume import forward_from_layer, forward_recording, resume_error
from bayesgeom.interp.norm_freeze import frozen_final_norm

FAMILIES = ("gpt_neox", "phi", "llama", "mistral", "windtunnel")


def _scale(model, batch) -> torch.Tensor:
    got: list[torch.Tensor] = []
    with model.hooks([("final_norm.scale", lambda s: got.append(s.clone()))]):
        model.forward(batch, logits_to_keep=1)
    return got[-1]


@pytest.mark.parametrize("family", FAMILIES)
def test_resumed_pass_equals_full_pass_and_restores_the_model(family, tiny_models,
                                                               family_prompts):
    m = interp.load(tiny_models[family].path)
    tokens, _ = m.encode(family_prompts[family])
    batch = m.batch(tokens)
    n_mods = len(list(m.hf.modules()))
    for layer in range(m.n_layers):
        full, cached = forward_recording(m, batch, layer, logits_to_keep=3)
        assert cached.hidden.shape[:2] == batch.input_ids.shape
        assert resume_error(m, cached, full) < 1e-5
    assert len(list(m.hf.modules())) == n_mods
    torch.testing.assert_close(m.forward(batch, logits_to_keep=3), full)


@pytest.mark.parametrize("family", ["llama", "windtunnel"])
def test_edits_at_and_after_the_resume_layer_apply(family, tiny_models, family_prompts):
    m = interp.load(tiny_models[family].path)
    batch = m.batch(m.encode(family_prompts[family])[0])
    _, cached = forward_recording(m, batch, 1)
    g = torch.Generator().manual_seed(0)
    u = torch.randn(m.geometry.n_kv_heads * m.geometry.d_head, generator=g)
    w = torch.randn(int(getattr(m.hf.config, "hidden_size", None) or m.hf.config.n_embd),
                    generator=g)
    for iv in (ProjectOut("attn.1.v", u), ShiftAlong("resid_post.1", w, delta=3.0)):
        with m.intervene(iv):
            full = m.forward(batch, logits_to_keep=1)
            resumed = forward_from_layer(m, cached)
        torch.testing.assert_close(resumed, full, atol=1e-5, rtol=1e-5)
        assert (full - m.forward(batch, logits_to_keep=1)).abs().max() > 1e-4


def test_resume_rejects_another_batch_and_bad_layers(llama, prompts):
    batch = llama.batch(llama.encode(prompts)[0])
    _, cached = forward_recording(llama, batch, 1)
    other = llama.batch(llama.encode(prompts[:2])[0])
    with pytest.raises(InterpError, match="another batch"):
        forward_from_layer(llama, type(cached)(1, other, cached.hidden))
    with pytest.raises(InterpError, match="does not exist"):
        forward_recording(llama, batch, 7)
    # the failed pass left the model whole
    assert len(llama.hf.model.layers) == llama.n_layers


@pytest.mark.parametrize("family", ["llama", "gpt_neox", "windtunnel"])
def test_frozen_norm_is_identity_on_the_clean_pass(family, tiny_models, family_prompts):
    m = interp.load(tiny_models[family].path)
    batch = m.batch(m.encode(family_prompts[family])[0])
    clean = m.forward(batch, logits_to_keep=2)
    with frozen_final_norm(m, _scale(m, batch)):
        frozen = m.forward(batch, logits_to_keep=2)
    torch.testing.assert_close(frozen, clean, atol=1e-5, rtol=1e-5)


@pytest.mark.parametrize("family", ["llama", "gpt_neox", "windtunnel"])
def test_direct_equals_total_when_the_norm_cannot_see_the_edit(family, tiny_models,
                                                               family_prompts):
    """Reflecting the final residual through the hyperplane orthogonal to a zero-mean axis
    (a cut with fraction 2) keeps its mean and RMS, so the final norm's scale is unchanged and the
    direct effect (scale frozen at its clean value) equals the total effect. A hard cut (fraction
    1) shrinks the residual, so there the two differ."""
    m = interp.load(tiny_models[family].path)
    batch = m.batch(m.encode(family_prompts[family])[0])
    d = int(getattr(m.hf.config, "hidden_size", None) or m.hf.config.n_embd)
    u = torch.randn(d, generator=torch.Generator().manual_seed(1))
    u = u - u.mean()
    last = f"resid_post.{m.n_layers - 1}"
    clean = m.forward(batch, logits_to_keep=1)
    scale = _scale(m, batch)
    for fraction, same in ((2.0, True), (1.0, False)):
        with m.intervene(ProjectOut(last, u, fraction=fraction)):
            total = m.forward(batch, logits_to_keep=1)
            with frozen_final_norm(m, scale):
                direct = m.forward(batch, logits_to_keep=1)
        assert (total - clean).abs().max() > 1e-3
        gap = float((direct - total).abs().max())
        assert (gap < 1e-4) if same else (gap > 1e-3), (fraction, gap)


def test_frozen_norm_checks_the_scale_shape(llama, prompts):
    batch = llama.batch(llama.encode(prompts)[0])
    with pytest.raises(InterpError, match="same batch"), frozen_final_norm(llama, torch.ones(1, 2)):
        llama.forward(batch, logits_to_keep=1)
    with pytest.raises(InterpError, match="positive"), frozen_final_norm(llama, torch.zeros(1, 2)):
        pass
