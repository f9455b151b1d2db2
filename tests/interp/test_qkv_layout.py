"""The q/k/v layout objects: each splits exactly its own part, and merge replaces only it."""

from __future__ import annotations

import pytest
import torch

from bayesgeom.interp.qkv_layout import FusedBlocks, FusedPerHead, SeparateQKV


def _tag(which: int, head: int, i: int) -> float:
    return 100.0 * which + 10.0 * head + i


def _output(layout, which: int, heads: tuple[int, int, int]) -> torch.Tensor:
    """A projection output [1, width] whose entries name their (part, head, dim), laid out as
    the family lays it out."""
    H, Hkv, dh = heads
    if isinstance(layout, SeparateQKV):  # one module per part: [n, dh]
        order = [(which, h, i) for h in range(H if which == 0 else Hkv) for i in range(dh)]
    elif isinstance(layout, FusedPerHead):  # [H, 3, dh]
        order = [(w, h, i) for h in range(H) for w in range(3) for i in range(dh)]
    else:  # [q (H) | k (Hkv) | v (Hkv)]
        order = [(w, h, i) for w, n in ((0, H), (1, Hkv), (2, Hkv)) for h in range(n)
                 for i in range(dh)]
    return torch.tensor([[_tag(*t) for t in order]], dtype=torch.float64)


@pytest.mark.parametrize("layout, heads", [(SeparateQKV("q", "k", "v"), (4, 2, 3)),
                                           (FusedPerHead("qkv"), (4, 4, 3)),
                                           (FusedBlocks("qkv"), (4, 2, 3)),
                                           (FusedBlocks("qkv"), (4, 4, 3))])
@pytest.mark.parametrize("which", [0, 1, 2])
def test_split_reads_its_part_and_merge_writes_only_it(layout, heads, which):
    raw = _output(layout, which, heads)
    assert raw.shape[-1] == layout.width(which, heads)
    part = layout.split(raw, which, heads)
    n = heads[0] if which == 0 else heads[1]
    want = torch.tensor([[[_tag(which, h, i) for i in range(heads[2])] for h in range(n)]],
                        dtype=torch.float64)
    torch.testing.assert_close(part, want)
    merged = layout.merge(raw, which, torch.full_like(part, -1.0), heads)
    changed = merged != raw
    assert int(changed.sum()) == part.numel() and bool((merged[changed] == -1).all())
