"""Which token positions to read or write: ``"last"``, ``"all"`` or explicit indices.

Indices count real tokens of each prompt from 0 (negative ones from its end), independent of the
padding a batch adds, so the same spec means the same tokens batched or alone.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import torch

from .errors import PositionError

PositionSpec = str | int | Sequence[int]


def normalise_positions(spec: PositionSpec) -> str | tuple[int, ...]:
    """``"last"``, ``"all"`` or a non-empty tuple of ints; raises :class:`PositionError`."""
    if isinstance(spec, str):
        if spec in ("last", "all"):
            return spec
        raise PositionError(f"unknown positions {spec!r}: use 'last', 'all' or a list of indices")
    if isinstance(spec, int):
        return (spec,)
    out = tuple(int(i) for i in spec)
    if not out:
        raise PositionError("empty list of positions: use 'last', 'all' or some indices")
    return out


def check_positions(spec: str | tuple[int, ...], lengths: Sequence[int]) -> None:
    """Raise if an index does not exist in some prompt (naming the prompt and its length)."""
    if isinstance(spec, str):
        return
    for p, n in enumerate(lengths):
        for i in spec:
            if not -n <= i < n:
                raise PositionError(
                    f"position {i} does not exist in prompt {p}, which has {n} tokens "
                    f"(valid: 0..{n - 1} or -{n}..-1)"
                )


@dataclass(frozen=True)
class RowSelection:
    """Rows to read from a [B, T, ...] activation: ``batch[r]``, ``column[r]`` (padded
    coordinates) and ``position[r]`` (index among the prompt's real tokens)."""

    batch: torch.Tensor
    column: torch.Tensor
    position: torch.Tensor

    def __len__(self) -> int:
        return int(self.batch.numel())


def select_rows(spec: str | tuple[int, ...], lengths: torch.Tensor, width: int) -> RowSelection:
    """Rows of a left-padded batch (prompt-major, then position order) for ``spec``."""
    offsets = width - lengths
    if spec == "last":
        b = torch.arange(lengths.numel())
        return RowSelection(b, torch.full_like(b, width - 1), lengths - 1)
    if spec == "all":
        b = torch.repeat_interleave(torch.arange(lengths.numel()), lengths)
        pos = torch.cat([torch.arange(int(n)) for n in lengths])
        return RowSelection(b, pos + offsets[b], pos)
    idx = torch.tensor(spec, dtype=torch.long)
    b = torch.arange(lengths.numel()).repeat_interleave(len(spec))
    pos = idx.repeat(lengths.numel())
    pos = torch.where(pos < 0, pos + lengths[b], pos)
    if bool(((pos < 0) | (pos >= lengths[b])).any()):
        check_positions(spec, [int(n) for n in lengths])
    return RowSelection(b, pos + offsets[b], pos)


def position_mask(spec: str | tuple[int, ...], lengths: torch.Tensor, width: int) -> torch.Tensor:
    """[B, T] bool: True where ``spec`` selects a real token (out-of-range indices select none)."""
    offsets = width - lengths
    cols = torch.arange(width)
    real = cols[None, :] >= offsets[:, None]
    if spec == "all":
        return real
    if spec == "last":
        return cols[None, :].expand(lengths.numel(), width) == width - 1
    if isinstance(spec, str):
        raise ValueError(f"unknown position spec {spec!r}: 'all', 'last' or indices")
    mask = torch.zeros(lengths.numel(), width, dtype=torch.bool)
    for i in spec:
        p = torch.where(torch.tensor(i) < 0, lengths + i, torch.full_like(lengths, i))
        ok = (p >= 0) & (p < lengths)
        rows = torch.nonzero(ok).flatten()
        mask[rows, (p + offsets)[rows]] = True
    return mask
