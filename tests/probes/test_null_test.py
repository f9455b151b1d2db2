"""The permutation-style p-value and z-score of an effect against control effects."""

from __future__ import annotations

import numpy as np
import pytest

from bayesgeom.probes import null_test


def test_p_counts_controls_at_least_as_large_in_magnitude():
    null = np.array([-0.5, 0.1, 0.2, 0.3, 0.9])
    t = null_test(0.4, null)
    assert t.p == pytest.approx((1 + 2) / 6)  # |-0.5| and 0.9 reach 0.4
    assert null_test(5.0, null).p == pytest.approx(1 / 6)  # the floor 1/(n+1)
    assert null_test(0.0, null).p == 1.0
    assert t.z == pytest.approx((0.4 - null.mean()) / null.std(ddof=1))
    assert t.n == 5


def test_p_is_calibrated_when_the_effect_is_one_more_control():
    rng = np.random.default_rng(0)
    ps = np.array([null_test(x[0], x[1:]).p for x in rng.normal(size=(4000, 20))])
    assert abs((ps <= 0.05).mean() - 0.0476) < 0.012  # P(p <= 1/21) = 1/21


def test_nans_are_dropped_and_an_empty_null_is_an_error():
    assert null_test(1.0, [np.nan, 0.5, 2.0]).n == 2
    assert np.isnan(null_test(np.nan, [0.5, 2.0]).p)
    with pytest.raises(ValueError, match="no finite"):
        null_test(1.0, [np.nan])
