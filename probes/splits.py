"""Seeded sample splits: balanced K-fold assignments and a train/test split."""

from __future__ import annotations

import numpy as np

from probes.bootstrap import make_rng


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


def train_test_indices(
    n: int, test_fraction: float = 0.2, seed: int | np.random.Generator | None = 0
) -> tuple[np.ndarray, np.ndarray]:
    """Disjoint sorted (train, test) index arrays; test has round(n · fraction) ≥ 1 samples."""
    if not 0.0 < test_fraction < 1.0:
        raise ValueError(f"test_fraction must be in (0, 1), got {test_fraction}")
    n_test = max(1, round(n * test_fraction))
    if n_test >= n:
        raise ValueError(f"{n} samples are too few for a {test_fraction:.0%} test split")
    perm = make_rng(seed).permutation(n)
    return np.sort(perm[n_test:]), np.sort(perm[:n_test])
