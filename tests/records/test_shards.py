"""Shard plans (contiguous, whole units, never empty) and the in-order merge of their parts."""

from __future__ import annotations

import itertools

import numpy as np
import pytest

from bayesgeom.records import concat_rows, part_fingerprint, part_name, shard_bounds


@pytest.mark.parametrize("n, k, unit", [(10, 3, 1), (15, 2, 4), (7, 7, 1), (3, 8, 1),
                                         (60, 2, 32), (1, 1, 5), (100, 4, 16)])
def test_shards_tile_the_items_in_order_on_whole_units(n, k, unit):
    bounds = shard_bounds(n, k, unit)
    assert bounds[0][0] == 0 and bounds[-1][1] == n
    assert all(a[1] == b[0] for a, b in itertools.pairwise(bounds))
    assert all(hi > lo for lo, hi in bounds) and len(bounds) == min(k, -(-n // unit))
    assert all(lo % unit == 0 for lo, _ in bounds)
    units = [-(-(hi - lo) // unit) for lo, hi in bounds]
    assert max(units) - min(units) <= 1 and units == sorted(units, reverse=True)


def test_the_plan_depends_only_on_its_sizes():
    assert shard_bounds(15, 2, 4) == [(0, 8), (8, 15)]
    assert shard_bounds(0, 3) == []
    with pytest.raises(ValueError):
        shard_bounds(5, 0)


def test_a_part_is_named_and_fingerprinted_by_its_place():
    assert part_name("twin-mixed", 0, 2) == "twin-mixed.part-000-of-002"
    fps = {part_fingerprint("s", k, b, n) for k, b, n in [(0, (0, 4), 2), (1, (4, 8), 2),
                                                         (0, (0, 4), 3), (0, (0, 5), 2)]}
    assert len(fps) == 4
    assert part_fingerprint("s", 0, (0, 4), 2) == part_fingerprint("s", 0, (0, 4), 2)


def test_concatenation_restores_the_whole_and_refuses_a_gap():
    x = np.arange(20.0).reshape(10, 2)
    bounds = shard_bounds(10, 3)
    assert np.array_equal(concat_rows([x[lo:hi] for lo, hi in bounds], bounds), x)
    with pytest.raises(ValueError, match="does not follow"):
        concat_rows([x[0:4], x[5:10]], [(0, 4), (5, 10)])
    with pytest.raises(ValueError, match="2 parts for 3 shards"):
        concat_rows([x[0:4], x[4:10]], bounds)
