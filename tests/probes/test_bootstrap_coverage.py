"""Bootstrap percentile intervals cover the true value at roughly their nominal 95 % rate."""

import math

import numpy as np
import pytest

from bayesgeom.probes import correlation_with_ci, mean_interval
from bayesgeom.probes.bootstrap import percentile_interval, resample_indices
from bayesgeom.probes.pca import fit_pca
from bayesgeom.probes.pca_summary import bootstrap_variance_ratios

pytestmark = pytest.mark.slow  # coverage simulations: the full tier

N_REPS = 200
# Binomial sd of the coverage over 200 replications is ~1.5 %; percentile intervals run slightly
# under nominal at these sample sizes. Too narrow or too wide intervals fall outside the band.
BAND = (0.90, 0.985)


def test_resample_indices_are_seeded_and_in_range():
    a = resample_indices(7, 50, seed=3)
    b = resample_indices(7, 50, seed=3)
    assert a.shape == (50, 7)
    assert np.array_equal(a, b)
    assert a.min() >= 0 and a.max() <= 6
    assert not np.array_equal(a, resample_indices(7, 50, seed=4))


def test_percentile_interval_bounds():
    reps = np.arange(1001, dtype=float)
    iv = percentile_interval(500.0, reps, level=0.9)
    assert iv.low == pytest.approx(50.0) and iv.high == pytest.approx(950.0)
    assert iv.bootstrap_mean == 500.0 and iv.n_resamples == 1001
    assert iv.contains(500.0) and not iv.contains(960.0)


def test_correlation_interval_coverage():
    rho = 0.5
    true_spearman = 6.0 / math.pi * math.asin(rho / 2.0)
    chol = np.linalg.cholesky(np.array([[1.0, rho], [rho, 1.0]]))
    hit_p = hit_s = 0
    for r in range(N_REPS):
        xy = np.random.default_rng(1000 + r).standard_normal((100, 2)) @ chol.T
        res = correlation_with_ci(xy[:, 0], xy[:, 1], n_resamples=400, seed=r)
        hit_p += res.pearson.contains(rho)
        hit_s += res.spearman.contains(true_spearman)
    assert BAND[0] <= hit_p / N_REPS <= BAND[1]
    assert BAND[0] <= hit_s / N_REPS <= BAND[1]


def test_standardized_pc1_interval_coverage():
    corr = np.array([[1.0, 0.6, 0.3], [0.6, 1.0, 0.1], [0.3, 0.1, 1.0]])
    true_pc1 = np.linalg.eigvalsh(corr).max() / 3.0
    chol = np.linalg.cholesky(corr)
    units = np.array([1.0, 10.0, 0.1])  # standardisation must remove these scales
    hits = 0
    for r in range(N_REPS):
        x = np.random.default_rng(5000 + r).standard_normal((150, 3)) @ chol.T * units
        reps = bootstrap_variance_ratios(x, 400, seed=r, standardize=True)
        est = fit_pca(x, standardize=True).explained_variance_ratio[0]
        hits += percentile_interval(est, reps[:, 0]).contains(true_pc1)
    assert BAND[0] <= hits / N_REPS <= BAND[1]


def test_mean_interval_coverage_on_skewed_data():
    hits = 0
    for r in range(N_REPS):
        x = np.random.default_rng(9000 + r).exponential(size=80)
        hits += mean_interval(x, 1000, seed=r).contains(1.0)
    assert BAND[0] <= hits / N_REPS <= BAND[1]
