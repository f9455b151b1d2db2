"""Effects against a null distribution of control effects (random directions).

``null_test(effect, null)``: the permutation-style p-value of an observed effect among ``n``
control effects, p = (1 + #{|e_r| ≥ |e|}) / (n + 1), two-sided on magnitudes (the smallest
attainable p is 1/(n+1)), and the z-score (e − mean) / std of the null (ddof = 1) with its
*parametric* two-sided normal p-value (:func:`parametric_p`), which can go below the floor
1/(n+1) but assumes the control effects are roughly normal.
"""

from __future__ import annotations

import math
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

    @property
    def p_z(self) -> float:
        """The parametric two-sided normal p-value of ``z``."""
        return parametric_p(self.z)

    @property
    def at_floor(self) -> bool:
        """True when ``p`` is the smallest attainable, 1/(n+1): no control reached the effect."""
        return bool(np.isfinite(self.p)) and self.p <= 1.0 / (self.n + 1) + 1e-12


def parametric_p(z: float) -> float:
    """Two-sided normal p-value P(|Z| ≥ |z|) = erfc(|z|/√2); NaN for a NaN z.

    Example:
        >>> round(parametric_p(1.959964), 4), parametric_p(0.0)
        (0.05, 1.0)
    """
    return math.erfc(abs(z) / math.sqrt(2.0)) if np.isfinite(z) else float("nan")


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
