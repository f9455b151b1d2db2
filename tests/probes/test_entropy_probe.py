"""Cross-validated ridge probe: linear target, noise, per-site table, streaming equivalence."""

import numpy as np
import pytest

from bayesgeom.probes import ProbeConfig, StreamingEntropyProbe, entropy_probe, entropy_probe_table
from bayesgeom.probes.ridge import ridge_path, ridge_path_from_moments
from bayesgeom.probes.splits import fold_assignments
from bayesgeom.probes.streaming_moments import StreamingMoments


def _linear(n=200, d=30, noise=0.05, seed=0):
    rng = np.random.default_rng(seed)
    x = rng.standard_normal((n, d)) * rng.uniform(0.1, 10, size=d)
    w = rng.standard_normal(d)
    return x, x @ w + 3.0 + noise * np.std(x @ w) * rng.standard_normal(n)


def test_r2_near_one_on_linear_target():
    x, y = _linear()
    res = entropy_probe(x, y)
    assert res.r2 > 0.98
    assert min(res.fold_r2) > 0.95
    assert res.predictions is not None and res.predictions.shape == (200,)


def test_r2_near_zero_on_noise():
    rng = np.random.default_rng(1)
    res = entropy_probe(rng.standard_normal((200, 30)), rng.standard_normal(200))
    assert -0.3 < res.r2 < 0.1
    assert max(res.alphas) >= 10.0  # the inner CV picks strong shrinkage


def test_fixed_alpha_skips_inner_cv_and_heavy_ridge_predicts_the_mean():
    x, y = _linear()
    res = entropy_probe(x, y, ProbeConfig(alphas=(1e8,)))
    assert set(res.alphas) == {1e8}
    assert res.r2 < 0.0  # out-of-fold mean prediction is slightly worse than the global mean


@pytest.mark.parametrize("n", [80, 7])  # n > d and n <= d (rank-deficient)
@pytest.mark.parametrize("std", [True, False])
def test_the_svd_fit_is_scikit_learns_ridge(n, std):
    """ridge_path writes out scikit-learn's svd solver (probes.ridge: measured, it was the
    probes' cost); on the same centred, scaled features with α_sklearn = n·α it gives the same
    coefficients and intercepts."""
    from sklearn.linear_model import Ridge

    from bayesgeom.probes.pca import standardization_scale

    x, y = _linear(n=n, d=10, noise=0.3)
    x[:, 3] = 2.0  # a constant feature: a zero singular value after centring
    alphas = [1e-4, 1e-3, 0.5, 30.0]
    scale = standardization_scale(x.std(axis=0)) if std else np.ones(10)
    z = (x - x.mean(axis=0)) / scale
    for a, m in zip(alphas, ridge_path(x, y, alphas, standardize=std), strict=True):
        ref = Ridge(alpha=n * a, solver="svd").fit(z, y)
        np.testing.assert_allclose(m.coef, ref.coef_ / scale, rtol=1e-7, atol=1e-9)
        np.testing.assert_allclose(m.predict(x), ref.predict(z), rtol=1e-7, atol=1e-10)


@pytest.mark.parametrize("n", [80, 7])  # n > d and n <= d (rank-deficient)
def test_svd_fit_and_moments_fit_agree(n):
    """The SVD of the data and the streaming eigen-solver (moments) are independent
    implementations of the same per-sample objective; they must give the same models."""
    x, y = _linear(n=n, d=10, noise=0.3)
    m = StreamingMoments.from_array(np.column_stack([x, y]))
    for std in (True, False):
        a = ridge_path(x, y, [1e-3, 0.5], standardize=std)
        b = ridge_path_from_moments(
            m.n, m.mean[:10], m.mean[10], m.scatter[:10, :10], m.scatter[:10, 10], [1e-3, 0.5],
            std)
        for ma, mb in zip(a, b, strict=True):
            np.testing.assert_allclose(ma.coef, mb.coef, rtol=1e-6, atol=1e-9)
            assert ma.intercept == pytest.approx(mb.intercept)


def test_ridge_matches_the_normal_equations_and_tends_to_least_squares():
    x, y = _linear(n=80, d=10, noise=0.3)
    n, alpha = len(y), 0.7
    xc, yc = x - x.mean(0), y - y.mean()
    w = np.linalg.solve(xc.T @ xc / n + alpha * np.eye(10), xc.T @ yc / n)  # (1/n)-objective
    np.testing.assert_allclose(ridge_path(x, y, [alpha], standardize=False)[0].coef, w,
                               rtol=1e-9)
    coef, *_ = np.linalg.lstsq(np.column_stack([x, np.ones(80)]), y, rcond=None)
    np.testing.assert_allclose(ridge_path(x, y, [1e-10])[0].coef, coef[:10], rtol=1e-6)
    with pytest.raises(ValueError, match="positive"):
        ridge_path(x, y, [0.0])


def test_probe_table_per_site_and_layer():
    x, y = _linear(n=120, d=12)
    noise = np.random.default_rng(2).standard_normal((120, 12))
    recs = entropy_probe_table({("values", 0): x, ("values", 1): noise, "resid": x}, y)
    assert [(r["site"], r["layer"]) for r in recs] == [
        ("values", 0),
        ("values", 1),
        ("resid", None),
    ]
    assert recs[0]["r2"] > 0.95 and recs[1]["r2"] < 0.2
    assert recs[2]["r2"] == recs[0]["r2"]  # same folds for every set
    assert {"n", "d", "r2_fold_mean", "r2_fold_std", "alpha_median"} <= set(recs[0])


def test_streaming_probe_matches_batch_probe_on_the_same_folds():
    x, y = _linear(n=150, d=8, noise=0.5)
    folds = fold_assignments(150, 5, np.random.default_rng(0))  # entropy_probe's outer folds
    sp = StreamingEntropyProbe(8, n_folds=5)
    for lo in range(0, 150, 40):
        sp.update(x[lo : lo + 40].astype(np.float32), y[lo : lo + 40], folds=folds[lo : lo + 40])
    stream = sp.result(alphas=(0.01,))
    batch = entropy_probe(x.astype(np.float32), y, ProbeConfig(alphas=(0.01,)))
    assert stream.r2 == pytest.approx(batch.r2, abs=1e-8)
    np.testing.assert_allclose(stream.fold_r2, batch.fold_r2, atol=1e-8)


def test_streaming_probe_with_alpha_grid():
    x, y = _linear(n=3000, d=16, noise=0.2, seed=4)
    sp = StreamingEntropyProbe(16, seed=1)
    for lo in range(0, 3000, 500):
        sp.update(x[lo : lo + 500], y[lo : lo + 500])
    assert sp.n == 3000
    assert sp.result().r2 > 0.9
    rng = np.random.default_rng(7)
    noise = StreamingEntropyProbe(16).update(rng.standard_normal((3000, 16)), rng.normal(size=3000))
    assert abs(noise.result().r2) < 0.02
