"""Parity with TransformerLens 4.3's own activation patching (``transformer_lens.patching``
``get_act_patch_*``, run on the ``TransformerBridge`` of the same saved weights, offline) on two
families: every layer × position (× head) of resid_pre, attn_out, mlp_out and per-head attn.z,
per pair, to float32 rounding. Our patching on the TransformerLens backend (full passes, no
layer resumption) agrees too. TransformerLens is imported here only (seconds)."""

from __future__ import annotations

import pytest
import torch

from bayesgeom import interp
from bayesgeom.interp import activation_patch, cell_grid, logit_diff_score, patch_roles

GOOD, BAD = 5, 7
CLEAN = [[11, 40, 52, 63, 71, 90], [12, 33, 44, 57, 61, 70]]
CORRUPT = [[11, 40, 52, 88, 71, 90], [12, 39, 44, 57, 61, 70]]
T = len(CLEAN[0])


def _metric(logits: torch.Tensor) -> torch.Tensor:
    return logits[:, -1, GOOD] - logits[:, -1, BAD]


@pytest.fixture(scope="module", params=["llama", "gpt_neox"])
def pair(request, tiny_models):
    path = tiny_models[request.param].path
    return interp.load(path), interp.load(path, backend="transformer_lens")


def test_matches_transformer_lens_get_act_patch(pair):
    from transformer_lens import patching

    hf, tl = pair
    bridge = tl.bridge
    clean, corrupt = torch.tensor(CLEAN), torch.tensor(CORRUPT)
    with torch.no_grad():
        _, cache = bridge.run_with_cache(clean)
    target, source = patch_roles(CLEAN, CORRUPT, "denoising")
    score = logit_diff_score(GOOD, BAD)
    L, H = hf.n_layers, hf.geometry.n_heads
    kw = dict(reduce="none", baseline=True)
    checked = 0
    for kind, fn in (("resid_pre", patching.get_act_patch_resid_pre),
                     ("attn_out", patching.get_act_patch_attn_out),
                     ("mlp_out", patching.get_act_patch_mlp_out)):
        ref = fn(bridge, corrupt, cache, _metric, **kw)  # [layer, pos, batch]
        ours = activation_patch(hf, target, source, cell_grid(hf, kind, positions="each",
                                                               length=T), score)
        got = ours.value().reshape(L, T, len(CLEAN))
        torch.testing.assert_close(got, ref.values.double(), atol=1e-5, rtol=1e-5, msg=kind)
        torch.testing.assert_close(ours.target[:, 0], ref.baseline.double(), atol=1e-5,
                                   rtol=1e-5)
        checked += int((got - ours.target[:, 0]).abs().gt(1e-3).sum())
    ref = patching.get_act_patch_attn_head_out_by_pos(bridge, corrupt, cache, _metric, **kw)
    cells = cell_grid(hf, "attn.z", heads=True, positions="each", length=T)
    ours = activation_patch(hf, target, source, cells, score)
    got = ours.value().reshape(L, H, T, len(CLEAN)).permute(0, 2, 1, 3)  # TL: layer, pos, head
    torch.testing.assert_close(got, ref.values.double(), atol=1e-5, rtol=1e-5)
    checked += int((got - ours.target[:, 0]).abs().gt(1e-3).sum())
    assert checked > 20  # enough cells move for the agreement to mean something


def test_our_patching_on_the_transformer_lens_backend_agrees(pair):
    hf, tl = pair
    cells = cell_grid(hf, ["resid_pre", "attn.z"], heads=True, positions=[1, 3])
    score = logit_diff_score(GOOD, BAD)
    a = activation_patch(hf, CORRUPT, CLEAN, cells, score)
    b = activation_patch(tl, CORRUPT, CLEAN, cells, score)
    torch.testing.assert_close(b.values, a.values, atol=1e-5, rtol=1e-5)
