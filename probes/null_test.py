"""Effects against a null distribution of control effects (random directions).

``null_test(effect, null)``: the permutation-style p-value of an observed effect among ``n``
control effects, p = (1 + #{|e_r| ≥ |e|}) / (n + 1), two-sided on magnitudes (the smallest
attainable p is 1/(n+1)), and the z-score (e − mean) / std of the null (ddof = 1).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np


@dataclass(frozen=True)
class NullTest:
    """An effect, its null's mean, std and 5/95 % quantiles, the p-value and z-score, ``n``."""

    effect: float
    null_mean: float
    null_std: float
    null_q05: float
    null_q95: float
    p: float
    z: float
    n: int


def null_test(effect: float, null: object) -> NullTest:
    """Compare ``effect`` with control effects ``null`` [n] (n ≥ 1; NaNs are dropped)."""
    e = float(effect)
    r = np.asarray(null, dtype=np.float64).ravel()
    r = r[np.isfinite(r)]
    if r.size < 1:
        raise ValueError("the null distribution has no finite control effects")
    if not np.isfinite(e):
        return NullTest(e, float(r.mean()), _std(r), *_q(r), float("nan"), float("nan"), r.size)
    # a tolerance so that exact ties (e.g. both zero) count as "at least as large"
    tol = 1e-12 * max(1.0, abs(e))
    p = (1 + int((np.abs(r) >= abs(e) - tol).sum())) / (r.size + 1)
    sd = _std(r)
    z = (e - float(r.mean())) / sd if sd > 0 else float("nan")
    return NullTest(e, float(r.mean()), sd, *_q(r), float(p), float(z), int(r.size))


def _std(r: np.ndarray) -> float:
    return float(r.std(ddof=1)) if r.size > 1 else float("nan")


def _q(r: np.ndarray) -> tuple[float, float]:
    lo, hi = np.quantile(r, [0.05, 0.95])
    return float(lo), float(hi)
