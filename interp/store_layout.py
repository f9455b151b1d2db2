"""How a capture is cut into store shards: rows per prompt, prompts per shard (about
:data:`SHARD_TARGET_BYTES` each), and the shards one worker's part runs (``capture(part=)``)."""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Any

from ..records import shard_bounds
from .errors import InterpError
from .model import InterpModel
from .sites import Site

#: the stored bytes a shard aims at
SHARD_TARGET_BYTES = 32 * 2**20


def n_rows(spec: str | tuple[int, ...], lengths: Sequence[int]) -> int:
    """Captured rows of prompts with ``lengths`` at positions ``spec``."""
    if spec == "last":
        return len(lengths)
    return sum(lengths) if spec == "all" else len(spec) * len(lengths)


def row_elems(model: InterpModel, site: Site, pattern_width: int) -> int:
    """Elements of one captured row of ``site`` (``pattern_width``: an attention pattern's keys)."""
    return math.prod(model.feature_shape(site, pattern_width))


def auto_prompts_per_shard(model: InterpModel, sites: list[Site], spec: Any, lengths: list[int],
                           batch_size: int, itemsize: int) -> int:
    """Prompts per store shard: about :data:`SHARD_TARGET_BYTES` of rows, a whole number of
    batches (``itemsize``: bytes per stored element)."""
    width = max(lengths)
    rows = 1 if spec == "last" else (len(spec) if isinstance(spec, tuple) else
                                     sum(lengths) / len(lengths))
    per_prompt = rows * itemsize * (sum(row_elems(model, s, width) for s in sites) + 4)
    n = max(1, int(SHARD_TARGET_BYTES // max(per_prompt, 1)))
    return max(batch_size, n // batch_size * batch_size)


def part_shards(part: tuple[int, int] | None, n_shards: int, out: object) -> range:
    """The shard indices a capture of ``n_shards`` shards runs: all, or the k-th of n
    contiguous runs (:func:`records.shard_bounds`) for ``part=(k, n)``, which needs a disk
    store ``out``.

    Example:
        >>> part_shards((1, 2), 5, "store"), part_shards(None, 5, None)
        (range(3, 5), range(0, 5))
    """
    if part is None:
        return range(n_shards)
    k, n_parts = part
    if out is None:
        raise InterpError("part= needs out= (a part is a disk store merged afterwards)")
    if not (isinstance(k, int) and isinstance(n_parts, int) and 0 <= k < n_parts):
        raise InterpError(f"part must be (k, n) with 0 <= k < n, got {part!r}")
    bounds = shard_bounds(n_shards, n_parts)
    if k >= len(bounds):
        raise InterpError(f"part {k} of {n_parts}: the capture has only {n_shards} shard(s)")
    return range(*bounds[k])
