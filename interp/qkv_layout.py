"""Per-head views of fused query/key/value projections, in the layout each HF family uses.

* ``"neox"`` (GPT-NeoX / Pythia ``query_key_value``): the output is laid out **per head**,
  ``[..., H, 3, dh]`` -- head h's q, k, v are consecutive ``dh`` slices. A ``[..., 3, H, dh]``
  split silently mixes q, k and v (the bug in the Paper III reference code).
* ``"concat"`` (GPT-2 ``c_attn``): ``[q | k | v]``, each ``H * dh`` wide, i.e. ``[..., 3, H, dh]``.

``which`` is 0 for queries, 1 for keys, 2 for values.
"""

from __future__ import annotations

import torch

FUSED_LAYOUTS = ("neox", "concat")


def _check(layout: str) -> None:
    if layout not in FUSED_LAYOUTS:
        raise ValueError(f"unknown fused QKV layout {layout!r}; known: {', '.join(FUSED_LAYOUTS)}")


def split_fused(raw: torch.Tensor, which: int, layout: str, n_heads: int) -> torch.Tensor:
    """View of q/k/v inside a fused projection output ``[..., 3*H*dh]`` as ``[..., H, dh]``."""
    _check(layout)
    d_head = raw.shape[-1] // (3 * n_heads)
    if layout == "neox":
        return raw.unflatten(-1, (n_heads, 3, d_head))[..., which, :]
    return raw.unflatten(-1, (3, n_heads, d_head))[..., which, :, :]


def merge_fused(
    raw: torch.Tensor, which: int, new: torch.Tensor, layout: str, n_heads: int
) -> torch.Tensor:
    """A copy of ``raw`` with the q/k/v part ``which`` replaced by ``new`` ``[..., H, dh]``."""
    out = raw.clone()
    split_fused(out, which, layout, n_heads).copy_(new)
    return out
