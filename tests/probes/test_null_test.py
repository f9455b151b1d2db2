"""The permutation-style p-value and z-score of an effect against control effects."""

from __future__ import annotations

import numpy as np
import pytest

from bayesgeom.probes import null_test
from bayesgeom.probes.null_test import NORMALITY_ALPHA, normality_p, predictive_p


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


def test_a_skewed_null_fails_the_normality_check_a_normal_one_passes():
    rng = np.random.default_rng(1)
    assert normality_p(rng.lognormal(sigma=1.0, size=240)) < NORMALITY_ALPHA
    assert normality_p(rng.normal(size=240)) >= NORMALITY_ALPHA
    assert np.isnan(normality_p([1.0, 1.0, 1.0, 1.0])) and np.isnan(normality_p([1.0, 2.0]))


def test_predictive_p_is_calibrated_for_one_more_draw_of_a_normal_null():
    rng = np.random.default_rng(2)
    draws = rng.normal(size=(4000, 21))
    ps = np.array([predictive_p(x[0], x[1:]) for x in draws])
    assert abs((ps <= 0.05).mean() - 0.05) < 0.012
    # fewer degrees of freedom: heavier tails, a larger p for the same effect
    null = rng.normal(size=40)
    assert predictive_p(4.0, null, df=3) > predictive_p(4.0, null) > 0
    assert np.isnan(predictive_p(1.0, [0.5, 0.5, 0.5])) and np.isnan(predictive_p(np.nan, null))
