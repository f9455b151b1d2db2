"""PCA (centred and standardised), participation ratio, 90/95 % dimension, the PCA summary."""

import numpy as np
import pytest

from bayesgeom.probes import dimension_at_variance, fit_pca, participation_ratio, summarize_pca


def _data(n, d, seed=0):
    rng = np.random.default_rng(seed)
    return rng.standard_normal((n, d)) @ rng.standard_normal((d, d)) + rng.normal(size=d) * 5


@pytest.mark.parametrize("n", [12, 400])  # fewer and more samples than dimensions
def test_fit_pca_matches_covariance_eigendecomposition(n):
    x = _data(n, 8)
    ref = np.sort(np.linalg.eigvalsh(np.cov(x, rowvar=False)))[::-1]
    pca = fit_pca(x)
    np.testing.assert_allclose(pca.spectrum[: min(n, 8)], ref[: min(n, 8)], atol=1e-9)
    np.testing.assert_allclose(pca.components @ pca.components.T, np.eye(8), atol=1e-9)
    scores = pca.transform(x)
    np.testing.assert_allclose(scores.var(axis=0, ddof=1), pca.eigenvalues, rtol=1e-9)
    # deterministic sign: largest-|entry| of each component is positive
    piv = pca.components[np.arange(8), np.abs(pca.components).argmax(axis=1)]
    assert (piv > 0).all()


def test_standardized_pca_is_correlation_pca_and_unit_free():
    x = _data(300, 6)
    ref = np.sort(np.linalg.eigvalsh(np.corrcoef(x, rowvar=False)))[::-1]
    pca = fit_pca(x, standardize=True)
    np.testing.assert_allclose(pca.spectrum, ref, atol=1e-9)
    rescaled = fit_pca(x * np.array([1e3, 1e-3, 1, 7, 0.5, 2]), standardize=True)
    np.testing.assert_allclose(rescaled.explained_variance_ratio, pca.explained_variance_ratio)
    assert not np.allclose(fit_pca(x * np.array([1e3, 1, 1, 1, 1, 1])).spectrum[0], ref[0])


def test_standardized_pca_ignores_constant_coordinates():
    x = _data(50, 4)
    xc = np.concatenate([x, np.full((50, 1), 3.0)], axis=1)
    a, b = fit_pca(x, standardize=True), fit_pca(xc, standardize=True)
    np.testing.assert_allclose(b.spectrum[:4], a.spectrum, atol=1e-9)
    assert np.isfinite(b.components).all()


def test_participation_ratio_isotropic_and_rank_one():
    rng = np.random.default_rng(1)
    d = 20
    iso = fit_pca(rng.standard_normal((20000, d)))
    assert iso.participation_ratio() == pytest.approx(d, rel=0.03)
    assert iso.participation_ratio(top_k=10) == pytest.approx(10, rel=0.01)
    direction = rng.standard_normal(d)
    rank1 = np.outer(rng.standard_normal(2000), direction) + 1e-3 * rng.standard_normal((2000, d))
    assert fit_pca(rank1).participation_ratio() == pytest.approx(1.0, abs=0.01)


def test_participation_ratio_and_dimension_on_known_spectrum():
    lam = [5.0, 3.0, 1.0, 1.0]
    assert participation_ratio(lam) == pytest.approx(100 / 36)
    assert participation_ratio(lam, top_k=2) == pytest.approx(64 / 34)
    assert dimension_at_variance(lam, 0.9) == 3
    assert dimension_at_variance(lam, 0.95) == 4
    assert dimension_at_variance(lam, 0.5) == 1
    assert dimension_at_variance([1.0, 1.0], 1.0) == 2


def test_summarize_pca_on_planted_two_dim_structure():
    rng = np.random.default_rng(2)
    n, d = 75, 40
    basis = np.linalg.qr(rng.standard_normal((d, 2)))[0].T
    x = (rng.standard_normal((n, 2)) * [6.0, 3.0]) @ basis + 0.3 * rng.standard_normal((n, d))
    s = summarize_pca(x, standardize=False, n_resamples=300, seed=0)
    true_pc1 = 36 / (36 + 9 + 0.09 * d)
    assert s.pc1.low <= s.pc1.estimate <= s.pc1.high
    assert abs(s.pc1.estimate - true_pc1) < 0.1
    assert s.pc1_pc2.estimate > 0.9 and s.pc1_pc2.low > 0.85
    assert s.dim90 == 2 and s.n_samples == n and s.n_features == d
    assert 1.0 < s.participation_ratio < 3.0
    assert s.participation_ratio_top10 <= 10
    lam = np.sort(np.linalg.eigvalsh(np.cov(x, rowvar=False)))[::-1]  # independent of probes
    assert s.pc1.estimate == pytest.approx(lam[0] / lam.sum(), rel=1e-9)
    assert s.pc1_pc2.estimate == pytest.approx(lam[:2].sum() / lam.sum(), rel=1e-9)
    again = summarize_pca(x, standardize=False, n_resamples=300, seed=0)
    assert again == s  # seeded


def test_summarize_pca_isotropic_pc1_is_small():
    x = np.random.default_rng(3).standard_normal((75, 50))
    s = summarize_pca(x, n_resamples=200)
    assert s.pc1.estimate < 0.1 and s.pc1_pc2.estimate < 0.2
