"""Holm's adjustment: a hand-computed example, monotone in the raw p-values, never below them,
capped at 1, NaN-aware; and the parametric p of a z-score."""

from __future__ import annotations

import numpy as np
import pytest

from bayesgeom.probes import holm, null_test, parametric_p
from bayesgeom.probes.multiple_testing import holm_reach


def test_holm_matches_a_hand_computed_example():
    # sorted: 0.005·4 = 0.02, 0.01·3 = 0.03, 0.03·2 = 0.06, 0.04·1 = 0.04 -> running max 0.06
    np.testing.assert_allclose(holm([0.01, 0.04, 0.03, 0.005]), [0.03, 0.06, 0.06, 0.02])
    np.testing.assert_allclose(holm([1 / 21] * 6), [6 / 21] * 6)
    assert holm([0.9, 0.8]).tolist() == [1.0, 1.0]


def test_holm_is_monotone_capped_and_nan_aware():
    rng = np.random.default_rng(0)
    p = rng.uniform(size=50) ** 3
    adj = holm(p)
    order = np.argsort(p)
    assert (np.diff(adj[order]) >= 0).all() and (adj >= p).all() and (adj <= 1).all()
    with_nan = np.r_[p[:3], np.nan]
    out = holm(with_nan)
    assert np.isnan(out[3]) and out[:3] == pytest.approx(holm(p[:3]))
    assert holm(np.empty(0)).size == 0
    with pytest.raises(ValueError, match=r"\[0, 1\]"):
        holm([0.5, 1.5])


def test_parametric_p_is_the_two_sided_normal_tail():
    assert parametric_p(1.959963985) == pytest.approx(0.05, rel=1e-6)
    assert parametric_p(-1.959963985) == pytest.approx(0.05, rel=1e-6)
    assert parametric_p(0.0) == 1.0 and np.isnan(parametric_p(float("nan")))
    t = null_test(5.0, [0.1, -0.2, 0.3, 0.0])
    assert t.at_floor and t.p == pytest.approx(1 / 5)
    assert t.p_z == pytest.approx(parametric_p(t.z)) and t.p_z < t.p


def test_holm_reach_is_the_most_controls_a_verdict_can_absorb():
    # one test among 20 controls: at the floor, a single control reaching it withdraws it
    assert holm_reach([1 / 21], [20], 0) == 0
    assert holm_reach([1 / 21, 1 / 21], [20, 20], 0) == -1  # Holm over two needs < 1/40
    # brute force against Holm itself, for a family of three with 240 controls each
    p = np.array([1 / 241, 0.3, 2 / 241])
    for i in range(3):
        got = holm_reach(p, [240] * 3, i)
        for c in range(20):
            q = p.copy()
            q[i] = (1 + c) / 241
            assert (holm(q)[i] <= 0.05) == (c <= got)
