"""Spearman correlation, and Pearson and Spearman of a component with a target with BCa bootstrap
CIs (:func:`probes.bootstrap.bca_interval`, the jackknife over pairs giving the acceleration).
Pearson itself (NaN-safe) lives in :mod:`infotheory`.

All functions work along the last axis, so a stack of bootstrap replicates [B, n] is handled in
one call. Spearman is Pearson on average-tie ranks (ties matter: bootstrap resamples repeat
rows). A constant input gives NaN. The sign of a PC is arbitrary: report |ρ| for PC1 vs entropy.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass
from typing import Any

import numpy as np
from scipy.stats import rankdata

from ..infotheory import pearson
from .arrays import as_vector
from .bootstrap import Interval, bca_interval, jackknife_indices, resample_indices


def average_ranks(a: object) -> np.ndarray:
    """1-based ranks along the last axis, ties given their average rank (scipy's ``rankdata``).
    Same shape, float64."""
    return rankdata(np.asarray(a, dtype=np.float64), method="average", axis=-1)


def spearman(x: object, y: object, min_n: int = 2) -> np.ndarray | float:
    """Spearman ρ along the last axis (Pearson on average-tie ranks); NaN for a constant input
    or fewer than ``min_n`` samples."""
    return pearson(average_ranks(x), average_ranks(y), min_n=min_n)


@dataclass(frozen=True)
class CorrelationResult:
    """Spearman and Pearson correlation of ``component`` with ``target`` over n samples.

    Both CIs come from the same bootstrap resamples of the (component, target) pairs; the
    component itself is held fixed (the CI is conditional on the fitted PC / axis).
    """

    n: int
    spearman: Interval
    pearson: Interval

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)


def correlation_with_ci(
    component: object,
    target: object,
    n_resamples: int = 1000,
    level: float = 0.95,
    seed: int | np.random.Generator | None = 0,
) -> CorrelationResult:
    """Correlate a component's coordinates [n] with a target [n] (e.g. next-token entropy)."""
    c = as_vector(component, "component")
    t = as_vector(target, "target", n=c.size)
    if c.size < 3:
        raise ValueError(f"need at least 3 samples, got {c.size}")
    idx = resample_indices(c.size, n_resamples, seed)
    cb, tb = c[idx], t[idx]
    jk = jackknife_indices(c.size)
    cj, tj = c[jk], t[jk]
    return CorrelationResult(
        n=c.size,
        spearman=bca_interval(float(spearman(c, t)), np.asarray(spearman(cb, tb)),
                              np.asarray(spearman(cj, tj)), level),
        pearson=bca_interval(float(pearson(c, t)), np.asarray(pearson(cb, tb)),
                             np.asarray(pearson(cj, tj)), level),
    )
