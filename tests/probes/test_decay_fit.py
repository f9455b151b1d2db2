"""The decay fit recovers ℓ_c from data drawn from its own curve, reports a lower bound when
nothing decays, and its bootstrap interval covers the truth."""

from __future__ import annotations

from dataclasses import replace

import numpy as np
import pytest

from bayesgeom.probes.bootstrap import EXCLUDES_NOTE
from bayesgeom.probes.decay_fit import (
    AT_FLOOR,
    CROSSED,
    NOT_CROSSED,
    bootstrap_critical_length,
    decay_curve,
    fit_decay,
)

ELL = np.array([16, 32, 80, 160, 320, 800, 1600])
CHANCE = 1 / 16


@pytest.mark.parametrize("lc,b", [(60.0, 2.0), (300.0, 4.0), (1000.0, 1.5)])
def test_the_fit_recovers_the_curve_it_was_drawn_from(lc, b):
    y = decay_curve(ELL, a=0.92, critical_length=lc, b=b, floor=CHANCE)
    f = fit_decay(ELL[::-1], y[::-1], floor=CHANCE)  # any order
    assert f.status == CROSSED
    assert f.critical_length == pytest.approx(lc, rel=1e-3)
    assert f.b == pytest.approx(b, rel=1e-3) and f.a == pytest.approx(0.92, rel=1e-3)
    assert f.rmse < 1e-6 and f.max_length == 1600


def test_no_decay_gives_the_lower_bound_not_a_number():
    rng = np.random.default_rng(0)
    outcomes = [rng.random(100) < 0.9 for _ in ELL]
    res = bootstrap_critical_length(ELL, outcomes, floor=CHANCE, n_boot=50, seed=0)
    assert res.fit.status == NOT_CROSSED
    assert res.estimate is None and res.lower_bound == 1600
    assert res.high is None  # the interval's upper end is beyond the measured range
    assert "> 1600" in res.describe()


def test_at_chance_from_the_start_has_no_critical_length():
    res = bootstrap_critical_length(ELL, [np.zeros(10)] * ELL.size, floor=CHANCE, n_boot=5)
    assert res.fit.status == AT_FLOOR and res.estimate is None and res.lower_bound is None
    assert res.low is None and res.high is None


@pytest.mark.slow  # a coverage simulation: the full tier
def test_the_bootstrap_interval_covers_the_truth_and_is_seeded():
    lc, covered = 150.0, 0
    p = decay_curve(ELL, a=0.95, critical_length=lc, b=3.0, floor=CHANCE)
    for trial in range(10):
        rng = np.random.default_rng(100 + trial)
        outcomes = [rng.random(150) < q for q in p]
        res = bootstrap_critical_length(ELL, outcomes, floor=CHANCE, n_boot=80, seed=trial)
        assert res.estimate is not None and res.low is not None and res.high is not None
        assert res.low <= res.estimate <= res.high
        covered += res.low <= lc <= res.high
    assert covered >= 8  # nominal 95 %: 10 of 10 expected, 8 allows bootstrap slack
    again = bootstrap_critical_length(ELL, outcomes, floor=CHANCE, n_boot=80, seed=9)
    assert (again.low, again.high) == (res.low, res.high)


def test_bad_inputs_are_refused():
    with pytest.raises(ValueError, match="one shape"):
        fit_decay([16, 32], [0.9, 0.5], floor=CHANCE)
    with pytest.raises(ValueError, match="positive"):
        fit_decay([0, 16, 32], [0.9, 0.8, 0.7], floor=CHANCE)
    with pytest.raises(ValueError, match="one non-empty"):
        bootstrap_critical_length([16, 32, 64], [np.ones(3)], floor=CHANCE)


def test_the_critical_length_is_not_put_before_the_shortest_length():
    y = decay_curve(ELL, a=0.99, critical_length=4.0, b=0.7, floor=CHANCE)  # decays early
    f = fit_decay(ELL, y, floor=CHANCE)
    assert f.status == CROSSED and f.critical_length >= ELL[0]


def test_a_ceiling_caps_the_plateau():
    y = np.array([1.0, 0.99, 0.9, 0.7, 0.4, 0.2, 0.1])
    assert fit_decay(ELL, y, floor=CHANCE).a > 1.0  # unconstrained, it overshoots
    f = fit_decay(ELL, y, floor=CHANCE, ceiling=1.0)
    assert f.status == CROSSED and f.a <= 1.0 + 1e-9


def test_the_interval_is_bias_corrected_and_one_that_excludes_its_estimate_says_so():
    """Issue 35: the replicates' quantiles at z₀-corrected levels (no acceleration); an
    interval that leaves ℓ_c out is flagged in the text every report prints."""
    p = decay_curve(ELL, a=0.95, critical_length=150.0, b=3.0, floor=CHANCE)
    rng = np.random.default_rng(100)
    res = bootstrap_critical_length(ELL, [rng.random(150) < q for q in p], floor=CHANCE,
                                    n_boot=80, seed=0)
    assert res.method == "bc" and not res.excludes_estimate
    assert EXCLUDES_NOTE not in res.describe()
    above = replace(res, low=res.estimate + 10.0, high=None)  # wholly above, as +∞ replicates
    assert above.excludes_estimate and above.describe().endswith(f"; {EXCLUDES_NOTE})")
    no_cross = bootstrap_critical_length(ELL, [np.random.default_rng(0).random(100) < 0.9
                                               for _ in ELL], floor=CHANCE, n_boot=20)
    assert no_cross.method == "percentile" and not no_cross.excludes_estimate
