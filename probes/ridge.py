"""Ridge regression of a scalar target on feature vectors, for a whole grid of alphas at once.

Objective (per alpha): minimise (1/n) Σ (y − b − wᵀz)² + α ‖w‖², where z are the features centred
on the training mean and, with ``standardize=True``, divided by the training std (ddof = 0), so
that α is independent of the sample count and, when standardised, of the feature units
(the eigenvalues of zᵀz/n then sum to d). α = 0 gives the minimum-norm least-squares fit.
Two solvers give the same models: from the data (SVD of the centred [n, d] matrix, cheap when
n ≤ d) and from moments (eigendecomposition of the [d, d] scatter: n > d and streaming fits).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from probes.arrays import as_matrix, as_vector
from probes.pca import standardization_scale

# Singular values / eigenvalues below this fraction of the largest count as zero (alpha = 0).
RANK_RTOL = 1e-10


@dataclass(frozen=True, eq=False)  # holds arrays: compare fields explicitly
class RidgeModel:
    """A fitted linear predictor ŷ = x · coef + intercept, in raw feature units. coef [d]."""

    coef: np.ndarray
    intercept: float
    alpha: float

    def predict(self, x: object) -> np.ndarray:
        """Predictions [n] for rows ``x`` [n, d]."""
        return as_matrix(x) @ self.coef + self.intercept


def _shrink(values: np.ndarray, alpha: float, n: int, power: int) -> np.ndarray:
    """s/(s² + nα) for singular values (power 1) or 1/(λ + nα) for eigenvalues (power 2)."""
    top = float(values.max()) if values.size else 0.0
    keep = values > RANK_RTOL * top
    if power == 1:
        den = values**2 + n * alpha
        num = values
    else:
        den = values + n * alpha
        num = np.ones_like(values)
    return np.where(keep, num / np.where(keep, den, 1.0), 0.0)


def ridge_path(
    x: object, y: object, alphas: Sequence[float], standardize: bool = True
) -> list[RidgeModel]:
    """Ridge models for each alpha from data ``x`` [n, d], ``y`` [n] (SVD solver)."""
    a = as_matrix(x, min_rows=2)
    t = as_vector(y, n=a.shape[0])
    n = a.shape[0]
    mx, my = a.mean(axis=0), float(t.mean())
    scale = standardization_scale(a.std(axis=0)) if standardize else np.ones(a.shape[1])
    z = (a - mx) / scale
    if n > a.shape[1]:  # tall: the d × d eigenproblem is cheaper than the SVD
        return _from_scaled_scatter(z.T @ z, z.T @ (t - my), scale, mx, my, n, alphas)
    u, s, vt = np.linalg.svd(z, full_matrices=False)
    uty = u.T @ (t - my)
    models = []
    for alpha in alphas:
        w = vt.T @ (_shrink(s, float(alpha), n, 1) * uty)
        coef = w / scale
        models.append(RidgeModel(coef, my - float(mx @ coef), float(alpha)))
    return models


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
        w = q @ (_shrink(lam, float(alpha), n, 2) * qty)
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
