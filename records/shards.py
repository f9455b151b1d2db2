"""Data-parallel shards: a list of items cut into contiguous parts, each run by one worker and
kept as a finished part (:class:`records.Parts`), then merged in order.

A *shard plan* depends only on the number of items, the number of shards and the unit the cuts
must fall on (a batch: so that every forward pass sees exactly the prompts, padding included,
that it sees in a one-worker run), never on which worker runs a shard or on which device. Each
shard's part is named ``<stage>.part-<k>-of-<n>`` and fingerprinted with what determines it
(:func:`part_fingerprint`), so a rerun reuses the finished parts and computes only the others:
a killed worker's shard runs again alone. Merging is concatenation in shard order
(:func:`concat_rows`): shards are contiguous, so that is the items' own order.

Example:
    >>> shard_bounds(10, 3)
    [(0, 4), (4, 7), (7, 10)]
    >>> shard_bounds(10, 3, unit=4)  # cuts on multiples of 4: whole batches of 4
    [(0, 4), (4, 8), (8, 10)]
    >>> part_name("score", 1, 3)
    'score.part-001-of-003'
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np

from .reuse import fingerprint


def shard_bounds(n: int, n_shards: int, unit: int = 1) -> list[tuple[int, int]]:
    """Contiguous ``(lo, hi)`` item ranges covering ``0:n``: ``n_shards`` of them (fewer where
    there are fewer whole units than shards, never an empty one), each cut on a multiple of
    ``unit`` items; their sizes in units differ by at most one, the larger first.

    Example:
        >>> shard_bounds(5, 2), shard_bounds(3, 8), shard_bounds(0, 2)
        ([(0, 3), (3, 5)], [(0, 1), (1, 2), (2, 3)], [])
    """
    if n_shards < 1 or unit < 1 or n < 0:
        raise ValueError(f"need n >= 0, n_shards >= 1 and unit >= 1, got {n}, {n_shards}, "
                         f"{unit}")
    units = -(-n // unit)
    k = min(n_shards, units)
    if k == 0:
        return []
    per, extra = divmod(units, k)
    out, lo = [], 0
    for i in range(k):
        hi = lo + per + (i < extra)
        out.append((lo * unit, min(n, hi * unit)))
        lo = hi
    return out


def part_name(stage: str, k: int, n_shards: int) -> str:
    """The part name of shard ``k`` of ``n_shards`` of ``stage``."""
    return f"{stage}.part-{k:03d}-of-{n_shards:03d}"


def part_fingerprint(stage_fingerprint: str, k: int, bounds: tuple[int, int],
                     n_shards: int) -> str:
    """The fingerprint of one shard's part: the stage's (what its items and settings are)
    with the shard's place in the plan.

    Example:
        >>> part_fingerprint("ab12", 0, (0, 4), 2) == part_fingerprint("ab12", 0, (0, 4), 3)
        False
    """
    return fingerprint(stage_fingerprint, k, list(bounds), n_shards)


def concat_rows(parts: Sequence[Any], bounds: Sequence[tuple[int, int]] | None = None,
                ) -> np.ndarray:
    """The per-item arrays of consecutive shards ([hi − lo, ...] each) as one [n, ...] array,
    in item order; ``bounds`` (each shard's range) are checked to tile ``0:n`` when given.

    Example:
        >>> concat_rows([np.array([1.0, 2.0]), np.array([3.0])], [(0, 2), (2, 3)])
        array([1., 2., 3.])
    """
    arrays = [np.asarray(p) for p in parts]
    if bounds is not None:
        if len(bounds) != len(arrays):
            raise ValueError(f"{len(arrays)} parts for {len(bounds)} shards")
        at = 0
        for (lo, hi), a in zip(bounds, arrays, strict=True):
            if lo != at or a.shape[0] != hi - lo:
                raise ValueError(f"shard {lo}:{hi} does not follow {at} or holds "
                                 f"{a.shape[0]} rows")
            at = hi
    return np.concatenate(arrays, axis=0)
