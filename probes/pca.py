"""Principal component analysis, centred or standardised, fitted in float64.

``standardize=True`` is Paper III's "canonical" PCA: every coordinate is z-scored across samples
(mean 0, std 1 with ddof = 1) before the covariance, so the eigenvalues are those of the
correlation matrix. Coordinates with (numerically) zero variance keep scale 1: their centred
values are 0 and they carry no variance. ``standardize=False`` is the wind-tunnel convention
(centre only).

Eigenvalues are variances along the PCs (ddof = 1). Sign convention: each component is flipped
so that its largest-magnitude entry is positive (deterministic across runs and solvers; the
convention of scikit-learn's ``svd_flip``). Batch fits use scikit-learn's ``PCA`` (full SVD);
:func:`pca_from_covariance` serves the streaming fit (:mod:`probes.streaming_pca`), which
scikit-learn cannot do exactly in one pass.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from .arrays import as_matrix
from .dimensionality import dimension_at_variance, participation_ratio

# A coordinate whose std is below this fraction of the largest std counts as constant.
CONSTANT_RTOL = 1e-12


@dataclass(frozen=True, eq=False)  # holds arrays: compare fields explicitly
class PCAResult:
    """A fitted PCA. Shapes: ``mean``/``scale`` [d]; ``components`` [k, d] (unit rows);
    ``eigenvalues`` [k]; ``spectrum`` [m] every eigenvalue the fit produced (m = min(n, d)),
    descending, used for ratios, participation ratio and the 90/95 % dimension.
    """

    mean: np.ndarray
    scale: np.ndarray | None
    components: np.ndarray
    eigenvalues: np.ndarray
    spectrum: np.ndarray
    n_samples: int

    @property
    def standardized(self) -> bool:
        return self.scale is not None

    @property
    def total_variance(self) -> float:
        return float(self.spectrum.sum())

    @property
    def explained_variance_ratio(self) -> np.ndarray:
        """[k] fraction of the total variance along each kept component."""
        return self.eigenvalues / self.total_variance

    def preprocess(self, x: object) -> np.ndarray:
        """Centre (and scale, if standardised) new rows with the fitted statistics. [n, d]."""
        a = as_matrix(x)
        if a.shape[1] != self.mean.shape[0]:
            raise ValueError(f"x has {a.shape[1]} features, PCA was fitted on {self.mean.size}")
        a = a - self.mean
        return a if self.scale is None else a / self.scale

    def transform(self, x: object, n_components: int | None = None) -> np.ndarray:
        """PC coordinates [n, k] of new rows."""
        comps = self.components if n_components is None else self.components[:n_components]
        return self.preprocess(x) @ comps.T

    def participation_ratio(self, top_k: int | None = None) -> float:
        return participation_ratio(self.spectrum, top_k)

    def dimension_at_variance(self, threshold: float) -> int:
        return dimension_at_variance(self.spectrum, threshold)


def standardization_scale(std: np.ndarray) -> np.ndarray:
    """Per-coordinate divisor: the std, with (numerically) constant coordinates set to 1."""
    std = np.asarray(std, dtype=np.float64)
    tiny = CONSTANT_RTOL * (float(std.max()) if std.size else 0.0)
    return np.where(std > tiny, std, 1.0)


def orient_components(components: np.ndarray) -> np.ndarray:
    """Flip each row so its largest-|·| entry is positive. [k, d] -> [k, d]."""
    if components.size == 0:
        return components
    pivot = components[np.arange(components.shape[0]), np.abs(components).argmax(axis=1)]
    return components * np.where(pivot < 0, -1.0, 1.0)[:, None]


def _keep(n_components: int | None, available: int) -> int:
    if n_components is None:
        return available
    if n_components < 1:
        raise ValueError(f"n_components must be >= 1, got {n_components}")
    return min(n_components, available)


def pca_from_covariance(
    cov: np.ndarray,
    mean: np.ndarray,
    n_samples: int,
    scale: np.ndarray | None = None,
    n_components: int | None = None,
) -> PCAResult:
    """PCA from a [d, d] covariance (already in standardised units when ``scale`` is given)."""
    cov = np.asarray(cov, dtype=np.float64)
    evals, evecs = np.linalg.eigh((cov + cov.T) / 2.0)
    order = np.argsort(evals)[::-1]
    evals = np.clip(evals[order], 0.0, None)
    m = min(n_samples, cov.shape[0])
    k = _keep(n_components, m)
    comps = orient_components(evecs[:, order[:k]].T.copy())
    return PCAResult(
        mean=np.asarray(mean, dtype=np.float64),
        scale=None if scale is None else np.asarray(scale, dtype=np.float64),
        components=comps,
        eigenvalues=evals[:k].copy(),
        spectrum=evals[:m].copy(),
        n_samples=int(n_samples),
    )


def fit_pca(x: object, standardize: bool = False, n_components: int | None = None) -> PCAResult:
    """Fit PCA to rows ``x`` [n, d] (n >= 2), in float64, with scikit-learn's full SVD.

    Example:
        >>> import numpy as np
        >>> x = np.random.default_rng(0).normal(size=(50, 3)) * [3.0, 1.0, 0.1]
        >>> fit_pca(x).explained_variance_ratio.round(2).tolist()
        [0.94, 0.06, 0.0]
    """
    a = as_matrix(x, min_rows=2)
    n, _ = a.shape
    mean = a.mean(axis=0)
    xc = a - mean
    scale = None
    if standardize:
        scale = standardization_scale(xc.std(axis=0, ddof=1))
        xc /= scale
    from sklearn.decomposition import PCA  # scikit-learn loads when a PCA is fitted

    pca = PCA(svd_solver="full").fit(xc)
    evals = pca.explained_variance_
    k = _keep(n_components, evals.size)
    return PCAResult(
        mean=mean,
        scale=scale,
        components=orient_components(pca.components_[:k].copy()),
        eigenvalues=evals[:k].copy(),
        spectrum=evals.copy(),
        n_samples=n,
    )
