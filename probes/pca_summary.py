"""Paper III's value-manifold table entry: PC1 and PC1+PC2 with bootstrap CIs, PR, 90/95 % dim.

The bootstrap resamples rows (prompts) with replacement and refits the whole PCA on each
resample, standardisation included (z-scores recomputed on the resample), exactly like the
full-sample fit; the jackknife refits it on each leave-one-out sample, and the two give the
shares' BCa intervals (:func:`probes.bootstrap.bca_interval`). Both are vectorised over
replicates: each replicate's spectrum comes from the smaller of its Gram matrix and its
covariance, batched through ``eigvalsh`` in chunks bounded by ``max_bytes``. Ratios are
fractions in [0, 1] (multiply by 100 for %).

With fewer rows than dimensions a resample's duplicated rows concentrate the spectrum, so the
replicates' shares run above the full-sample share; where nearly all do, the interval (BCa or
percentile alike) excludes the estimate and says so (``Interval.contains_estimate``).
"""

from __future__ import annotations

from dataclasses import asdict, dataclass
from typing import Any

import numpy as np

from .arrays import as_matrix
from .bootstrap import Interval, bca_interval, jackknife_indices, resample_indices
from .pca import CONSTANT_RTOL, fit_pca


def variance_ratios_of_rows(
    x: object,
    idx: np.ndarray,
    standardize: bool = True,
    n_top: int = 2,
    max_bytes: int = 1 << 27,
) -> np.ndarray:
    """Explained-variance ratios of the top ``n_top`` PCs of ``x[idx[b]]`` for each row set
    ``idx`` [B, m] (bootstrap or jackknife indices), PCA refitted on each. [B, n_top]."""
    a = as_matrix(x, min_rows=2)
    d = a.shape[1]
    idx = np.asarray(idx)
    n_sets, n = idx.shape
    m = min(n, d)
    per_replicate = 8 * (2 * n * d + m * m)
    chunk = max(1, max_bytes // per_replicate)
    k = min(n_top, m)
    out = np.zeros((n_sets, n_top))
    for start in range(0, n_sets, chunk):
        xb = a[idx[start : start + chunk]]  # [c, n, d]
        xb -= xb.mean(axis=1, keepdims=True)
        if standardize:
            std = xb.std(axis=1, keepdims=True)
            tiny = CONSTANT_RTOL * std.max(axis=2, keepdims=True)
            xb /= np.where(std > tiny, std, 1.0)
        mat = xb @ xb.transpose(0, 2, 1) if n <= d else xb.transpose(0, 2, 1) @ xb
        evals = np.clip(np.linalg.eigvalsh(mat)[:, ::-1], 0.0, None)
        total = evals.sum(axis=1, keepdims=True)
        with np.errstate(invalid="ignore", divide="ignore"):
            out[start : start + chunk, :k] = evals[:, :k] / total
    return out


def bootstrap_variance_ratios(
    x: object,
    n_resamples: int = 1000,
    seed: int | np.random.Generator | None = 0,
    standardize: bool = True,
    n_top: int = 2,
    max_bytes: int = 1 << 27,
) -> np.ndarray:
    """Explained-variance ratios of the top ``n_top`` PCs per bootstrap replicate. [B, n_top]."""
    a = as_matrix(x, min_rows=2)
    idx = resample_indices(a.shape[0], n_resamples, seed)
    return variance_ratios_of_rows(a, idx, standardize, n_top, max_bytes)


@dataclass(frozen=True)
class PCASummary:
    """Dimensionality of one set of vectors (e.g. final-layer values over 75 prompts)."""

    standardized: bool
    n_samples: int
    n_features: int
    pc1: Interval
    pc1_pc2: Interval
    explained_variance_ratio: tuple[float, ...]
    participation_ratio: float
    participation_ratio_top10: float
    dim90: int
    dim95: int

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)


def summarize_pca(
    x: object,
    standardize: bool = True,
    n_resamples: int = 1000,
    level: float = 0.95,
    seed: int | np.random.Generator | None = 0,
    n_ratios: int = 10,
) -> PCASummary:
    """PC1 / PC1+PC2 ratios with BCa bootstrap CIs over rows, PR and 90/95 % dimension.

    ``x`` [n, d]. ``participation_ratio`` uses every eigenvalue, ``participation_ratio_top10``
    the 10 largest (Paper III's code); ``explained_variance_ratio`` lists the first ``n_ratios``.
    """
    a = as_matrix(x, min_rows=3)
    pca = fit_pca(a, standardize=standardize)
    ratios = pca.explained_variance_ratio
    reps = bootstrap_variance_ratios(a, n_resamples, seed, standardize, n_top=2)
    jack = variance_ratios_of_rows(a, jackknife_indices(a.shape[0]), standardize, n_top=2)
    pc2 = float(ratios[1]) if ratios.size > 1 else 0.0
    return PCASummary(
        standardized=standardize,
        n_samples=a.shape[0],
        n_features=a.shape[1],
        pc1=bca_interval(float(ratios[0]), reps[:, 0], jack[:, 0], level),
        pc1_pc2=bca_interval(float(ratios[0]) + pc2, reps.sum(axis=1), jack.sum(axis=1), level),
        explained_variance_ratio=tuple(float(r) for r in ratios[:n_ratios]),
        participation_ratio=pca.participation_ratio(),
        participation_ratio_top10=pca.participation_ratio(top_k=10),
        dim90=pca.dimension_at_variance(0.90),
        dim95=pca.dimension_at_variance(0.95),
    )
