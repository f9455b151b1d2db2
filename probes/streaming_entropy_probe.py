"""The entropy-regression probe on streams too large to hold: per-fold moments of [x, y].

Each sample is assigned to one of K folds (seeded, or given by the caller) and only the float64
moments (n, mean, scatter) of the augmented vector [x, y] are kept per fold: O(K · d²) memory.
Ridge fits come from merged moments (:func:`probes.ridge.ridge_path_from_moments`) and held-out
squared errors from the held-out fold's moments, exactly:
Σ (y − b − cᵀx)² = n_h (aᵀμ_h − b)² + aᵀ S_h a with a = [−c, 1].
α is chosen per outer fold by leave-one-fold-out CV over the remaining K − 1 folds, then the
reported ``r2`` is the pooled out-of-fold R², as in :mod:`probes.entropy_probe`.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from .arrays import as_matrix, as_vector
from .entropy_probe import DEFAULT_ALPHAS, ProbeResult
from .ridge import RidgeModel, ridge_path_from_moments
from .streaming_moments import StreamingMoments, merge_all


def _models(m: StreamingMoments, alphas: Sequence[float], standardize: bool) -> list[RidgeModel]:
    d = m.dim - 1
    return ridge_path_from_moments(
        m.n, m.mean[:d], float(m.mean[d]), m.scatter[:d, :d], m.scatter[:d, d], alphas, standardize
    )


def held_out_sse(model: RidgeModel, m: StreamingMoments) -> float:
    """Σ (y − ŷ)² over the samples summarised by augmented moments ``m`` of [x, y]."""
    a = np.append(-model.coef, 1.0)
    resid_mean = float(a @ m.mean) - model.intercept
    return m.n * resid_mean**2 + float(a @ m.scatter @ a)


class StreamingEntropyProbe:
    """Accumulate (x [b, d], y [b]) batches; :meth:`result` gives the cross-validated probe."""

    def __init__(self, dim: int, n_folds: int = 5, seed: int = 0) -> None:
        if n_folds < 3:
            raise ValueError(f"n_folds must be >= 3 (inner CV uses K − 1 folds), got {n_folds}")
        self.dim = dim
        self.n_folds = n_folds
        self.folds = [StreamingMoments(dim + 1) for _ in range(n_folds)]
        self._rng = np.random.default_rng(seed)

    @property
    def n(self) -> int:
        return sum(f.n for f in self.folds)

    def update(self, x: object, y: object, folds: object | None = None) -> StreamingEntropyProbe:
        """Add a batch; ``folds`` [b] (ints in [0, K)) overrides the seeded random assignment."""
        a = as_matrix(x)
        if a.shape[1] != self.dim:
            raise ValueError(f"x has {a.shape[1]} features, probe has {self.dim}")
        t = as_vector(y, "y", n=a.shape[0])
        f: np.ndarray
        if folds is None:
            f = np.asarray(self._rng.integers(0, self.n_folds, size=a.shape[0]))
        else:
            f = np.asarray(folds, dtype=np.int64)
            if f.shape != (a.shape[0],) or f.min() < 0 or f.max() >= self.n_folds:
                raise ValueError(f"folds must be {a.shape[0]} ints in [0, {self.n_folds})")
        z = np.concatenate([a, t[:, None]], axis=1)
        for k in np.unique(f):
            self.folds[k].update(z[f == k])
        return self

    def result(
        self, alphas: Sequence[float] = DEFAULT_ALPHAS, standardize: bool = True
    ) -> ProbeResult:
        """Nested-CV held-out R² from the accumulated moments (predictions are not kept)."""
        if any(f.n < 2 for f in self.folds):
            raise ValueError("every fold needs at least 2 samples")
        grid = sorted((float(a) for a in alphas), reverse=True)
        d = self.dim
        sse_total, fold_r2, chosen = 0.0, [], []
        for k in range(self.n_folds):
            rest = [j for j in range(self.n_folds) if j != k]
            if len(grid) == 1:
                alpha = grid[0]
            else:
                inner = np.zeros(len(grid))
                for j in rest:
                    train = merge_all(self.folds[i] for i in rest if i != j)
                    for i, m in enumerate(_models(train, grid, standardize)):
                        inner[i] += held_out_sse(m, self.folds[j])
                alpha = grid[int(np.argmin(inner))]
            (model,) = _models(merge_all(self.folds[i] for i in rest), [alpha], standardize)
            sse = held_out_sse(model, self.folds[k])
            sst = float(self.folds[k].scatter[d, d])
            sse_total += sse
            fold_r2.append(float("nan") if sst == 0.0 else 1.0 - sse / sst)
            chosen.append(alpha)
        sst_total = float(merge_all(self.folds).scatter[d, d])
        r2 = float("nan") if sst_total == 0.0 else 1.0 - sse_total / sst_total
        return ProbeResult(self.n, d, r2, tuple(fold_r2), tuple(chosen), None)
