"""Effects against a null distribution of control effects (random directions).

``null_test(effect, null)``: the permutation-style p-value of an observed effect among ``n``
control effects, p = (1 + #{|e_r| ≥ |e|}) / (n + 1), two-sided on magnitudes (the smallest
attainable p is 1/(n+1)), and the z-score (e − mean) / std of the null (ddof = 1) with its
*parametric* two-sided normal p-value (:func:`parametric_p`), which can go below the floor
1/(n+1) but assumes the control effects are roughly normal.

For an effect read as *one more draw* from a normal null estimated from the controls,
:func:`predictive_p` is the exact two-sided p: (e − mean) / (std·√(1 + 1/n)) against a Student
t with ``df`` degrees of freedom (n − 1 for independent controls). It is only as good as the
normality it assumes: :func:`normality_p` is the Shapiro–Wilk p of the control effects, and a
caller withholds the parametric p where it falls below :data:`NORMALITY_ALPHA`.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np
from scipy import stats as sps

#: a null whose Shapiro–Wilk p falls below this is not read as normal (withholding a
#: parametric p is the conservative side, so the level is not adjusted for the number of nulls)
NORMALITY_ALPHA = 0.05


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


def normality_p(null: object) -> float:
    """The Shapiro–Wilk p of the finite control effects ``null`` [n] (small: not normal); NaN
    with fewer than 3 or no spread beyond float rounding (nothing to be normal about).

    Example:
        >>> rng = np.random.default_rng(0)
        >>> normality_p(rng.normal(size=200)) > 0.05, normality_p(rng.exponential(size=200)) < 1e-6
        (True, True)
    """
    r = np.asarray(null, dtype=np.float64).ravel()
    r = r[np.isfinite(r)]
    if r.size < 3 or not r.std() > 1e-9 * max(float(np.abs(r).max()), 1e-300):
        return float("nan")
    return float(sps.shapiro(r).pvalue)


def predictive_p(effect: float, null: object, df: float | None = None) -> float:
    """Two-sided p of ``effect`` as one more draw from the normal null of the finite control
    effects ``null`` [n] (module doc): Student t with ``df`` degrees of freedom (default n − 1;
    at least 1); NaN for a NaN effect, fewer than 2 controls or no spread beyond float rounding.

    Example:
        >>> round(predictive_p(3.0, [-1.0, 0.0, 1.0, 0.5, -0.5]), 4)
        0.0257
    """
    r = np.asarray(null, dtype=np.float64).ravel()
    r = r[np.isfinite(r)]
    if r.size < 2 or not np.isfinite(effect):
        return float("nan")
    sd = float(r.std(ddof=1))
    if not sd > 1e-9 * max(abs(float(r.mean())), abs(effect), 1e-300):
        return float("nan")
    t = (effect - float(r.mean())) / (sd * math.sqrt(1 + 1 / r.size))
    dof = max(float(r.size - 1 if df is None else min(df, r.size - 1)), 1.0)
    return float(2 * sps.t.sf(abs(t), dof))
