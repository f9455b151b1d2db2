"""Seeded balanced K-fold assignments: the folds of the entropy probe's cross-validation.

Kept rather than scikit-learn's ``KFold``: ``KFold(shuffle=True)`` assigns contiguous chunks of
a permutation, a different partition for the same seed, which would move every probe R² that
bayesgeom has published (by fold noise; measured in the README's development section).
"""

from __future__ import annotations

import numpy as np

from .bootstrap import make_rng


def fold_assignments(
    n: int, n_folds: int, seed: int | np.random.Generator | None = 0
) -> np.ndarray:
    """Fold id in [0, n_folds) for each of n samples, int64 [n]; fold sizes differ by ≤ 1."""
    if n_folds < 2:
        raise ValueError(f"n_folds must be >= 2, got {n_folds}")
    if n < n_folds:
        raise ValueError(f"{n} samples cannot fill {n_folds} folds")
    folds = np.empty(n, dtype=np.int64)
    folds[make_rng(seed).permutation(n)] = np.arange(n) % n_folds
    return folds
