"""Seeded nonparametric bootstrap: resample indices, percentile intervals, the mean's CI.

Resampling is over the rows of the data (prompts, sequences): each replicate draws ``n`` row
indices with replacement from a ``numpy.random.Generator`` seeded by the caller, so results are
reproducible. Intervals are percentile intervals (the ``(1 − level)/2`` and ``(1 + level)/2``
quantiles of the replicates, linear interpolation).
"""

from __future__ import annotations

from dataclasses import asdict, dataclass

import numpy as np

from .arrays import as_vector


@dataclass(frozen=True)
class Interval:
    """A point estimate with a percentile bootstrap interval.

    ``estimate`` is the statistic on the full sample; ``bootstrap_mean`` the mean of the
    replicates (Paper III reports this one); ``low``/``high`` the interval at ``level``.
    """

    estimate: float
    low: float
    high: float
    level: float
    n_resamples: int
    bootstrap_mean: float

    def contains(self, value: float) -> bool:
        return self.low <= value <= self.high

    @property
    def width(self) -> float:
        return self.high - self.low

    def to_dict(self) -> dict[str, float | int]:
        return asdict(self)


def make_rng(seed: int | np.random.Generator | None) -> np.random.Generator:
    """A Generator from an int seed (or pass one through)."""
    if isinstance(seed, np.random.Generator):
        return seed
    return np.random.default_rng(seed)


def resample_indices(
    n: int, n_resamples: int, seed: int | np.random.Generator | None = 0
) -> np.ndarray:
    """Bootstrap row indices, int64 [n_resamples, n], drawn with replacement from range(n)."""
    if n < 1 or n_resamples < 1:
        raise ValueError(f"need n >= 1 and n_resamples >= 1, got {n}, {n_resamples}")
    return make_rng(seed).integers(0, n, size=(n_resamples, n))


def percentile_interval(estimate: float, replicates: np.ndarray, level: float = 0.95) -> Interval:
    """Percentile interval of 1-D ``replicates`` around the full-sample ``estimate``.

    Non-finite replicates (e.g. a correlation of a constant resample) are dropped; if none is
    left the bounds are NaN.
    """
    if not 0.0 < level < 1.0:
        raise ValueError(f"level must be in (0, 1), got {level}")
    r = np.asarray(replicates, dtype=np.float64).ravel()
    n_total = int(r.size)
    r = r[np.isfinite(r)]
    if r.size == 0:
        nan = float("nan")
        return Interval(float(estimate), nan, nan, level, n_total, nan)
    lo, hi = np.quantile(r, [(1.0 - level) / 2.0, (1.0 + level) / 2.0])
    return Interval(float(estimate), float(lo), float(hi), level, n_total, float(r.mean()))


def mean_interval(
    values: object,
    n_resamples: int = 1000,
    level: float = 0.95,
    seed: int | np.random.Generator | None = 0,
) -> Interval:
    """Bootstrap CI of the mean of a 1-D sample (vectorised over replicates)."""
    v = as_vector(values, "values")
    idx = resample_indices(v.size, n_resamples, seed)
    return percentile_interval(float(v.mean()), v[idx].mean(axis=1), level)
