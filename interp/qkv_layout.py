"""Where queries, keys and values sit in a family's attention projections: one object per
layout that splits a projection output into heads and merges an edited part back.

* :class:`SeparateQKV` -- three projections (``q_proj``/``k_proj``/``v_proj``), each output
  ``[..., n·dh]`` grouped by head; under GQA ``k`` and ``v`` have ``Hkv < H`` heads.
* :class:`FusedPerHead` -- GPT-NeoX / Pythia ``query_key_value``: laid out **per head**,
  ``[..., H, 3, dh]`` (head h's q, k, v are consecutive ``dh`` slices). A ``[..., 3, H, dh]``
  split silently mixes q, k and v (the bug in the Paper III reference code).
* :class:`FusedBlocks` -- one projection laid out as blocks ``[q | k | v]`` of ``H·dh``,
  ``Hkv·dh``, ``Hkv·dh``: GPT-2's ``c_attn`` (a Conv1D, Hkv = H) and the ``qkv_proj`` of
  Phi-3-style models under GQA.

``which`` is 0 for queries, 1 for keys, 2 for values; ``heads`` is (H, Hkv, dh).

Example:
    >>> import torch
    >>> raw = torch.arange(2 * (4 + 2 + 2) * 3.0).view(2, 24)   # H = 4, Hkv = 2, dh = 3
    >>> FusedBlocks("qkv_proj").split(raw, 1, (4, 2, 3)).shape
    torch.Size([2, 2, 3])
"""

from __future__ import annotations

from dataclasses import dataclass

import torch

Heads = tuple[int, int, int]


def _count(which: int, heads: Heads) -> int:
    return heads[0] if which == 0 else heads[1]


@dataclass(frozen=True)
class QKVLayout:
    """Base: ``split`` gives a view ``[..., n, dh]`` of q, k or v in a projection output;
    ``merge`` returns a copy of the output with that part replaced."""

    def module_path(self, which: int) -> str:
        raise NotImplementedError

    @property
    def fused(self) -> bool:
        return False

    def width(self, which: int, heads: Heads) -> int:
        """The output width of the module that holds part ``which``."""
        return _count(which, heads) * heads[2]

    def split(self, raw: torch.Tensor, which: int, heads: Heads) -> torch.Tensor:
        return raw.unflatten(-1, (_count(which, heads), heads[2]))

    def merge(self, raw: torch.Tensor, which: int, new: torch.Tensor, heads: Heads,
              ) -> torch.Tensor:
        out = raw.clone()
        self.split(out, which, heads).copy_(new)
        return out


@dataclass(frozen=True)
class SeparateQKV(QKVLayout):
    """Three projections, at these paths inside the attention module."""

    q: str
    k: str
    v: str

    def module_path(self, which: int) -> str:
        return (self.q, self.k, self.v)[which]


@dataclass(frozen=True)
class _Fused(QKVLayout):
    """One projection at ``path`` holds q, k and v."""

    path: str

    def module_path(self, which: int) -> str:
        return self.path

    @property
    def fused(self) -> bool:
        return True


@dataclass(frozen=True)
class FusedPerHead(_Fused):
    """Laid out ``[..., H, 3, dh]`` (no GQA)."""

    def width(self, which: int, heads: Heads) -> int:
        return 3 * heads[0] * heads[2]

    def split(self, raw: torch.Tensor, which: int, heads: Heads) -> torch.Tensor:
        return raw.unflatten(-1, (heads[0], 3, heads[2]))[..., which, :]


@dataclass(frozen=True)
class FusedBlocks(_Fused):
    """Laid out ``[q (H·dh) | k (Hkv·dh) | v (Hkv·dh)]``."""

    def width(self, which: int, heads: Heads) -> int:
        return (heads[0] + 2 * heads[1]) * heads[2]

    def split(self, raw: torch.Tensor, which: int, heads: Heads) -> torch.Tensor:
        n_q, n_kv, dh = heads
        start = (0, n_q, n_q + n_kv)[which] * dh
        part = raw.narrow(-1, start, _count(which, heads) * dh)
        return part.unflatten(-1, (_count(which, heads), dh))
