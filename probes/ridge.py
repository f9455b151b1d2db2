"""Ridge regression of a scalar target on feature vectors, for a whole grid of alphas at once.

Objective (per alpha): minimise (1/n) Σ (y − b − wᵀz)² + α ‖w‖² (α > 0), where z are the features
centred on the training mean and, with ``standardize=True``, divided by the training std
(ddof = 0), so that α is independent of the sample count and, when standardised, of the feature
units (the eigenvalues of zᵀz/n then sum to d).

:func:`ridge_path` fits from data by one thin SVD of the centred features for all alphas:
w_α = V diag(s / (s² + nα)) Uᵀ (y − ȳ), singular values at or below 1e-15 dropped -- the solution
and the cut-off of scikit-learn's ``Ridge(solver="svd")`` with α_sklearn = n·α, which a test holds
it to. It is written out because the probes fit many small problems (an entropy probe is 30 fits:
5 outer folds, each 5 inner folds and a refit; 5,940 fits took 16 s of a 67 s ``compare`` of the
README's quick start under cProfile) and there scikit-learn's per-call input checks cost as much
as the fit: 1.73 ms against 0.82 ms for 17 alphas on 16 x 576 features (2-core machine, idle,
2026-11-27). :func:`ridge_path_from_moments` fits from sufficient statistics
(eigendecomposition of the [d, d] scatter) for streaming fits.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from .arrays import as_matrix, as_vector
from .pca import standardization_scale

# Scatter eigenvalues below this fraction of the largest count as zero.
RANK_RTOL = 1e-10
# Singular values at or below this count as zero in ridge_path (scikit-learn's svd solver's).
SVD_CUTOFF = 1e-15


@dataclass(frozen=True, eq=False)  # holds arrays: compare fields explicitly
class RidgeModel:
    """A fitted linear predictor ŷ = x · coef + intercept, in raw feature units. coef [d]."""

    coef: np.ndarray
    intercept: float
    alpha: float

    def predict(self, x: object) -> np.ndarray:
        """Predictions [n] for rows ``x`` [n, d]."""
        return as_matrix(x) @ self.coef + self.intercept


def _shrink(eigenvalues: np.ndarray, alpha: float, n: int) -> np.ndarray:
    """1/(λ + nα) for eigenvalues above the rank cut-off, 0 for the (numerically) null ones."""
    top = float(eigenvalues.max()) if eigenvalues.size else 0.0
    keep = eigenvalues > RANK_RTOL * top
    return np.where(keep, 1.0 / np.where(keep, eigenvalues + n * alpha, 1.0), 0.0)


def ridge_path(
    x: object, y: object, alphas: Sequence[float], standardize: bool = True
) -> list[RidgeModel]:
    """Ridge models for each alpha (> 0) from data ``x`` [n, d], ``y`` [n].

    Example:
        >>> import numpy as np
        >>> x = np.random.default_rng(0).normal(size=(40, 3))
        >>> m = ridge_path(x, x @ [1.0, -2.0, 0.0] + 3.0, [1e-6, 10.0], standardize=False)
        >>> m[0].coef.round(3).tolist(), round(m[0].intercept, 3), bool(abs(m[1].coef[1]) < 1)
        ([1.0, -2.0, 0.0], 3.0, True)
    """
    a = as_matrix(x, min_rows=2)
    t = as_vector(y, n=a.shape[0])
    grid = np.asarray(alphas, dtype=np.float64)
    if grid.ndim != 1 or grid.size == 0 or not (grid > 0).all():
        raise ValueError(f"alphas must be positive, got {list(alphas)}")
    n = a.shape[0]
    mx = a.mean(axis=0)
    scale = standardization_scale(a.std(axis=0)) if standardize else np.ones(a.shape[1])
    z = (a - mx) / scale  # [n, d], centred
    u, sv, vt = np.linalg.svd(z, full_matrices=False)  # [n, r], [r], [r, d]
    ty = t.mean()
    uty = u.T @ (t - ty)  # [r]
    keep = sv > SVD_CUTOFF
    shrink = np.where(keep, sv / np.where(keep, sv**2 + n * grid[:, None], 1.0), 0.0)  # [k, r]
    coefs = (shrink * uty) @ vt / scale  # [n_alphas, d] in raw units
    return [RidgeModel(c, float(ty) - float(mx @ c), float(alpha))
            for c, alpha in zip(coefs, grid, strict=True)]


def _from_scaled_scatter(
    szz: np.ndarray,
    szy: np.ndarray,
    scale: np.ndarray,
    mean_x: np.ndarray,
    mean_y: float,
    n: int,
    alphas: Sequence[float],
) -> list[RidgeModel]:
    lam, q = np.linalg.eigh((szz + szz.T) / 2.0)
    qty = q.T @ szy
    models = []
    for alpha in alphas:
        w = q @ (_shrink(lam, float(alpha), n) * qty)
        coef = w / scale
        models.append(RidgeModel(coef, float(mean_y) - float(mean_x @ coef), float(alpha)))
    return models


def ridge_path_from_moments(
    n: int,
    mean_x: np.ndarray,
    mean_y: float,
    scatter_xx: np.ndarray,
    scatter_xy: np.ndarray,
    alphas: Sequence[float],
    standardize: bool = True,
) -> list[RidgeModel]:
    """Ridge models from sufficient statistics: n, means, centred scatter Σ(x−x̄)(x−x̄)ᵀ [d, d]
    and Σ(x−x̄)(y−ȳ) [d] (eigendecomposition solver)."""
    sxx = np.asarray(scatter_xx, dtype=np.float64)
    sxy = np.asarray(scatter_xy, dtype=np.float64)
    if standardize:
        scale = standardization_scale(np.sqrt(np.clip(np.diag(sxx), 0.0, None) / n))
    else:
        scale = np.ones(sxx.shape[0])
    szz = sxx / np.outer(scale, scale)
    return _from_scaled_scatter(
        szz, sxy / scale, scale, np.asarray(mean_x, dtype=np.float64), mean_y, n, alphas
    )
