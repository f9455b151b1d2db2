"""Effective dimension of a covariance spectrum: participation ratio and k at a variance level.

Both take the eigenvalues of the covariance (or, for standardised PCA, of the correlation matrix)
in any order; negative round-off eigenvalues are clipped to 0.
"""

from __future__ import annotations

import numpy as np


def _spectrum(eigenvalues: object) -> np.ndarray:
    lam = np.asarray(eigenvalues, dtype=np.float64).ravel()
    if lam.size == 0:
        raise ValueError("empty spectrum")
    return np.sort(np.clip(lam, 0.0, None))[::-1]


def participation_ratio(eigenvalues: object, top_k: int | None = None) -> float:
    """PR = (Σ λ_i)² / Σ λ_i², in [1, #eigenvalues]; NaN for an all-zero spectrum.

    ``top_k=None`` uses every eigenvalue given (the definition in Paper III's text);
    ``top_k=10`` uses only the 10 largest (what Paper III's released code computes), which caps
    PR at 10. Isotropic data in d dims gives ≈ d; rank-one data gives ≈ 1.
    """
    lam = _spectrum(eigenvalues)
    if top_k is not None:
        if top_k < 1:
            raise ValueError(f"top_k must be >= 1, got {top_k}")
        lam = lam[:top_k]
    s2 = float(np.sum(lam**2))
    if s2 == 0.0:
        return float("nan")
    return float(np.sum(lam) ** 2 / s2)


def explained_variance_ratio(eigenvalues: object) -> np.ndarray:
    """λ_i / Σ λ over the whole given spectrum, sorted descending."""
    lam = _spectrum(eigenvalues)
    total = lam.sum()
    if total == 0.0:
        raise ValueError("all-zero spectrum has no explained-variance ratio")
    return lam / total


def dimension_at_variance(eigenvalues: object, threshold: float) -> int:
    """Smallest k whose top-k eigenvalues explain ≥ ``threshold`` (a fraction, e.g. 0.9).

    Pass the *full* spectrum: a truncated one overstates the ratios.
    """
    if not 0.0 < threshold <= 1.0:
        raise ValueError(f"threshold must be in (0, 1], got {threshold}")
    cum = np.cumsum(explained_variance_ratio(eigenvalues))
    return min(int(np.searchsorted(cum, threshold - 1e-12)) + 1, int(cum.size))
