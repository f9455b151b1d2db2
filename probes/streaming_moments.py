"""Streaming mean and covariance in float64: batch updates merged with Chan et al.'s formula.

Each batch's mean and centred scatter are computed in float64 and merged into the running
(n, mean, M2) with the pairwise update of Chan, Golub & LeVeque (1979), which is exact in exact
arithmetic and numerically stable (no Σx² − n·x̄² cancellation). Two accumulators fed disjoint
data merge into the one that saw all of it. Memory is O(d²) regardless of n.
"""

from __future__ import annotations

from collections.abc import Iterable

import numpy as np

from .arrays import as_matrix


class StreamingMoments:
    """Running count, mean [d] and scatter M2 = Σ (x − mean)(x − mean)ᵀ [d, d] of rows in R^d."""

    def __init__(self, dim: int) -> None:
        if dim < 1:
            raise ValueError(f"dim must be >= 1, got {dim}")
        self.dim = dim
        self.n = 0
        self.mean = np.zeros(dim)
        self.scatter = np.zeros((dim, dim))

    @classmethod
    def from_array(cls, x: object) -> StreamingMoments:
        a = as_matrix(x)
        return cls(a.shape[1]).update(a)

    @classmethod
    def from_batches(cls, dim: int, batches: Iterable[object]) -> StreamingMoments:
        m = cls(dim)
        for b in batches:
            m.update(b)
        return m

    def update(self, batch: object) -> StreamingMoments:
        """Add rows ``batch`` [b, d] (any float dtype); returns self."""
        a = np.asarray(batch, dtype=np.float64)
        if a.ndim == 2 and a.shape[0] == 0:
            return self
        a = as_matrix(a, "batch")
        if a.shape[1] != self.dim:
            raise ValueError(f"batch has {a.shape[1]} features, accumulator has {self.dim}")
        mean_b = a.mean(axis=0)
        centred = a - mean_b
        self._merge(a.shape[0], mean_b, centred.T @ centred)
        return self

    def _merge(self, n_b: int, mean_b: np.ndarray, scatter_b: np.ndarray) -> None:
        n_a = self.n
        n = n_a + n_b
        delta = mean_b - self.mean
        self.mean = self.mean + delta * (n_b / n)
        self.scatter = self.scatter + scatter_b + np.outer(delta, delta) * (n_a * n_b / n)
        self.n = n

    def merge(self, other: StreamingMoments) -> StreamingMoments:
        """A new accumulator equal to one fed both streams (neither input is modified)."""
        if other.dim != self.dim:
            raise ValueError(f"cannot merge dims {self.dim} and {other.dim}")
        out = self.copy()
        if other.n:
            out._merge(other.n, other.mean, other.scatter)
        return out

    def copy(self) -> StreamingMoments:
        out = StreamingMoments(self.dim)
        out.n, out.mean, out.scatter = self.n, self.mean.copy(), self.scatter.copy()
        return out

    def covariance(self, ddof: int = 1) -> np.ndarray:
        """Covariance [d, d] = M2 / (n − ddof)."""
        if self.n - ddof <= 0:
            raise ValueError(f"need more than {ddof} samples, have {self.n}")
        return self.scatter / (self.n - ddof)

    def variance(self, ddof: int = 1) -> np.ndarray:
        """Per-coordinate variance [d]."""
        return np.diag(self.covariance(ddof)).copy()


def merge_all(parts: Iterable[StreamingMoments]) -> StreamingMoments:
    """Merge accumulators (at least one) into a new one."""
    it = iter(parts)
    out = next(it).copy()
    for p in it:
        out = out.merge(p)
    return out
