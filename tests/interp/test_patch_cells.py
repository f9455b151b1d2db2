"""Patch cells and grids: the order and contents of a grid, heads split by the right count (kv
heads for k and v), positions, TransformerLens names; and the model-free check, which refuses a
bad site, head, position or pair set in one line before any model (or torch) is loaded."""

from __future__ import annotations

import subprocess
import sys

import pytest

from bayesgeom.interp.errors import PositionError, PromptError, UnknownSiteError
from bayesgeom.interp.patch_cells import ModelShape, PatchCell, cell_grid, check_cells, check_pairs

SHAPE = ModelShape(n_layers=30, n_heads=9, n_kv_heads=3)


def test_grid_order_heads_and_positions():
    cells = cell_grid(SHAPE, ["attn.k", "mlp_out"], heads=True, positions="each", length=2,
                      layers=[0, -1])
    assert len(cells) == 2 * 3 * 2 + 2 * 2
    assert cells[:3] == [PatchCell("attn.0.k", 0, 0, 0), PatchCell("attn.0.k", 0, 0, 1),
                         PatchCell("attn.0.k", 0, 1, 0)]
    assert {c.head for c in cells if c.kind == "attn.k"} == {0, 1, 2}  # 3 kv heads
    assert cells[-1] == PatchCell("mlp_out.29", 29, None, 1)
    assert len(cell_grid(SHAPE, "attn.*.q", heads=True)) == 30 * 9
    assert [c.position for c in cell_grid(SHAPE, "resid_pre.3", positions=[None, -1, -1])] \
        == [None, -1]
    assert cell_grid(SHAPE, "blocks.4.attn.hook_z", heads=[8])[0].label == "attn.4.z[h=8]"
    assert PatchCell.at("blocks.2.hook_mlp_out", position=-1).label == "mlp_out.2@-1"


def test_the_model_free_check_refuses_in_one_line():
    cases = [
        (UnknownSiteError, "heads 0..2", lambda: cell_grid(SHAPE, "attn.k", heads=[3])),
        (UnknownSiteError, "layer 30 does not exist", lambda: cell_grid(SHAPE, "resid_pre.30")),
        (UnknownSiteError, "did you mean", lambda: cell_grid(SHAPE, "resid_psot.3")),
        (UnknownSiteError, "cannot be patched", lambda: cell_grid(SHAPE, "attn.0.pattern")),
        (UnknownSiteError, "cannot be patched", lambda: cell_grid(SHAPE, "logits")),
        (UnknownSiteError, "no site kinds", lambda: cell_grid(SHAPE, [])),
        (UnknownSiteError, "not known", lambda: cell_grid(ModelShape(4), "attn.z", heads=True)),
        (PositionError, "position 12", lambda: cell_grid(SHAPE, "mlp_out", positions=[12],
                                                         length=12)),
        (PositionError, "needs length", lambda: cell_grid(SHAPE, "mlp_out", positions="each")),
        (UnknownSiteError, "no cells", lambda: check_cells([], SHAPE)),
        (UnknownSiteError, "layer 31", lambda: check_cells([PatchCell("attn.31.v", 31)], SHAPE)),
        (UnknownSiteError, "has no heads", lambda: PatchCell("resid_pre.1", 1, head=0)),
        (UnknownSiteError, "not a patchable site", lambda: PatchCell("resid_pre.1", 2)),
        (UnknownSiteError, "non-negative", lambda: PatchCell.at("attn.-1.z")),
        (PositionError, "equal lengths", lambda: check_pairs([5, 6], [5, 5])),
        (PromptError, "no pairs", lambda: check_pairs([], [])),
        (PromptError, "one source per target", lambda: check_pairs([5], [5, 5])),
        (PositionError, "position -6", lambda: check_pairs([5, 6], [5, 6],
                                                           [PatchCell("mlp_out.0", 0, None, -6)])),
    ]
    for err, words, call in cases:
        with pytest.raises(err) as info:
            call()
        msg = str(info.value)
        assert words in msg and "\n" not in msg, msg
    # heads unknown before loading: an explicit head list is taken, checked once loaded
    assert len(cell_grid(ModelShape(4), "attn.z", heads=[0, 7])) == 8


def test_checking_a_grid_imports_no_torch():
    code = ("import sys; from bayesgeom.interp.patch_cells import ModelShape, cell_grid; "
            "cell_grid(ModelShape(30, 9, 3), 'attn.z', heads=True); "
            "assert 'torch' not in sys.modules, 'torch imported'")
    subprocess.run([sys.executable, "-c", code], check=True)
