"""A decay curve of a metric against sequence length, and the critical length with a bootstrap
interval.

**Curve** (a logistic in log-length, floor ``c`` fixed):

    y(ℓ) = c + (a − c) / (1 + (ℓ / ℓ_c)^b),   ℓ > 0 tokens, b > 0

``a`` is the short-length plateau, ``c`` the floor it decays to (for accuracy: chance, 1/V),
``b`` the steepness in log-length and ``ℓ_c`` the **critical length**: y(ℓ_c) = (a + c) / 2,
half way between the plateau and the floor. It is fitted by least squares
(:func:`scipy.optimize.curve_fit`) on x = ln ℓ, with b bounded to [0.05, 50] and ℓ_c to
[ℓ_min, e⁵ ℓ_max]: not below the shortest measured length, where the crossing rule below has
the value still above half way (a free ℓ_c ≪ ℓ_min would only say the plateau lies unmeasured
before it), and up to a factor e⁵ ≈ 150 past the longest.

**Crossing rule** (no number made up outside the data): the measured values *cross* when some
y(ℓ_i) falls below h = c + (y(ℓ_min) − c) / 2, half way between the value at the shortest
measured length and the floor. Without a crossing ℓ_c is reported as a lower bound, "> ℓ_max";
when y(ℓ_min) is already at the floor (y(ℓ_min) ≤ c) there is nothing to decay and no ℓ_c.

**Uncertainty** (:func:`bootstrap_critical_length`): the per-sequence outcomes at each length
(correct 1/0 for accuracy) are resampled with replacement, independently per length (seeded);
each replicate's means go through the same rule and fit; a replicate without a crossing counts
as ℓ_c = +∞, one whose fit fails or that is at the floor already is left out (counted). The
interval is the bias-corrected percentile interval (:func:`probes.bootstrap.bca_levels` with no
acceleration: a jackknife would refit the curve once per sequence, not practical here): the
replicates' quantiles at the levels z₀ corrects (``inverted_cdf``, so +∞ never meets
interpolation; the plain (1 ∓ level)/2 levels when every replicate lies on one side of the
estimate or the data do not cross). An end at +∞ is reported as None: "beyond the measured
range". An interval that still excludes its estimate says so
(:data:`probes.bootstrap.EXCLUDES_NOTE`).

Example:
    >>> import numpy as np
    >>> ell = np.array([16, 32, 80, 160, 320, 800])
    >>> y = decay_curve(ell, a=0.9, critical_length=150.0, b=3.0, floor=0.0625)
    >>> f = fit_decay(ell, y, floor=0.0625)
    >>> round(f.critical_length, 1), round(f.a, 3), f.status
    (150.0, 0.9, 'crossed')
    >>> fit_decay(ell, np.full(6, 0.9), floor=0.0625).status
    'not_crossed'
"""

from __future__ import annotations

import math
import warnings
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
from scipy.optimize import OptimizeWarning, curve_fit

from .bootstrap import BC, EXCLUDES_NOTE, PERCENTILE, bca_levels, make_rng

CROSSED, NOT_CROSSED, AT_FLOOR = "crossed", "not_crossed", "at_floor"
_B_BOUNDS = (0.05, 50.0)
_LOG_MARGIN = 5.0


def decay_curve(lengths: object, a: float, critical_length: float, b: float,
                floor: float) -> np.ndarray:
    """y(ℓ) of the module doc at ``lengths`` [n] (tokens) -> [n], float64."""
    ell = np.asarray(lengths, dtype=np.float64)
    return floor + (a - floor) / (1.0 + (ell / critical_length) ** b)


@dataclass(frozen=True)
class DecayFit:
    """One fit. ``status``: crossed, not_crossed or at_floor (module doc); ``a``,
    ``critical_length`` (tokens), ``b`` the fitted parameters (NaN when no fit ran or it
    failed); ``floor`` the fixed c; ``halfway`` h of the crossing rule; ``rmse`` of the fit in
    the metric's units; ``max_length`` the longest measured length (the lower bound when not
    crossed)."""

    status: str
    a: float
    critical_length: float
    b: float
    floor: float
    halfway: float
    rmse: float
    max_length: float

    @property
    def crossed(self) -> bool:
        return self.status == CROSSED


def _check(lengths: object, values: object) -> tuple[np.ndarray, np.ndarray]:
    ell = np.asarray(lengths, dtype=np.float64)
    y = np.asarray(values, dtype=np.float64)
    if ell.ndim != 1 or ell.shape != y.shape or ell.size < 3:
        raise ValueError(f"need lengths and values of one shape [n >= 3] (three parameters are "
                         f"fitted), got {ell.shape} and {y.shape}")
    if not (np.isfinite(ell).all() and (ell > 0).all() and np.isfinite(y).all()):
        raise ValueError("lengths must be positive and finite, values finite")
    order = np.argsort(ell, kind="stable")
    return ell[order], y[order]


def fit_decay(lengths: object, values: object, floor: float,
              ceiling: float | None = None) -> DecayFit:
    """Fit the module doc's curve to ``values`` [n] measured at ``lengths`` [n] (tokens, any
    order, n >= 3: a, ℓ_c and b are fitted) with the floor c = ``floor`` fixed and the
    plateau a at most ``ceiling`` where given (1 for accuracy).
    The fit also runs when the values do not cross (its ℓ_c is then an extrapolation:
    report ``max_length`` as the lower bound instead)."""
    ell, y = _check(lengths, values)
    half = float(floor + (y[0] - floor) / 2.0)
    if y[0] <= floor:
        return DecayFit(AT_FLOOR, math.nan, math.nan, math.nan, floor, half, math.nan,
                        float(ell[-1]))
    status = CROSSED if bool((y < half).any()) else NOT_CROSSED
    x = np.log(ell)
    below = np.flatnonzero(y < half)
    x0 = x[below[0]] if below.size else x[-1] + 1.0

    def model(xx: np.ndarray, a: float, xc: float, b: float) -> np.ndarray:
        z = np.clip(b * (xx - xc), -700.0, 700.0)
        return floor + (a - floor) / (1.0 + np.exp(z))

    top = np.inf if ceiling is None else float(ceiling)
    if top <= y[0]:
        top = float(y[0]) + 1e-9  # the plateau can reach at least the value measured
    lo = [-np.inf, x[0], _B_BOUNDS[0]]
    hi = [top, x[-1] + _LOG_MARGIN, _B_BOUNDS[1]]
    p0 = [float(min(y[0], top - 1e-9)), float(np.clip(x0, lo[1] + 1e-6, hi[1] - 1e-6)), 2.0]
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", OptimizeWarning)
            p, _ = curve_fit(model, x, y, p0=p0, bounds=(lo, hi), maxfev=5000)
    except (RuntimeError, ValueError):
        return DecayFit(status, math.nan, math.nan, math.nan, floor, half, math.nan,
                        float(ell[-1]))
    rmse = float(np.sqrt(np.mean((model(x, *p) - y) ** 2)))
    return DecayFit(status, float(p[0]), float(np.exp(p[1])), float(p[2]), floor, half, rmse,
                    float(ell[-1]))


@dataclass(frozen=True)
class CriticalLength:
    """ℓ_c (tokens) with its bootstrap interval (module doc). ``estimate``: the fitted ℓ_c
    when the data cross, else None; ``lower_bound``: the longest measured length when they do
    not ("> lower_bound"), else None; ``low``/``high``: the interval ends at ``level`` (None:
    beyond the measured range, i.e. a replicate quantile without a crossing; both None also
    when the data are at the floor); ``n_boot`` replicates, ``n_not_crossed`` of them without a
    crossing, ``n_failed`` left out (the fit failed, or at the floor already); ``method``
    "bc" (bias-corrected percentile) or "percentile" (module doc)."""

    fit: DecayFit
    estimate: float | None
    lower_bound: float | None
    low: float | None
    high: float | None
    level: float
    n_boot: int
    n_not_crossed: int
    n_failed: int
    method: str = BC

    @property
    def excludes_estimate(self) -> bool:
        """True when the data cross and the interval (an end None: +∞) leaves ℓ_c out."""
        if self.estimate is None:
            return False
        lo = math.inf if self.low is None else self.low
        hi = math.inf if self.high is None else self.high
        return not lo <= self.estimate <= hi

    def describe(self) -> str:
        """One phrase: 'ℓ_c = 150 [120, 190] tokens' or 'ℓ_c > 800 tokens'."""
        def end(v: float | None) -> str:
            if v is None:
                return f"> {self.fit.max_length:.0f}"
            return f"{v:.0f}" if v >= 10 else f"{v:.2g}"

        if self.fit.status == AT_FLOOR:
            return "no critical length (already at the floor at the shortest length)"
        if self.estimate is None:
            return (f"critical length > {self.lower_bound:.0f} tokens (no crossing measured; "
                    f"{self.level:.0%} interval [{end(self.low)}, {end(self.high)}])")
        flag = f"; {EXCLUDES_NOTE}" if self.excludes_estimate else ""
        return (f"critical length {self.estimate:.0f} tokens ({self.level:.0%} interval "
                f"[{end(self.low)}, {end(self.high)}]{flag})")


def bootstrap_critical_length(lengths: Sequence[float], outcomes: Sequence[object],
                              floor: float, n_boot: int = 200, level: float = 0.95,
                              seed: int | np.random.Generator | None = 0,
                              ceiling: float | None = None) -> CriticalLength:
    """ℓ_c of the means of ``outcomes`` (one 1-D array per length: per-sequence values, e.g.
    correct 1/0, at ``lengths`` tokens) with a bias-corrected percentile interval over
    ``n_boot`` replicates resampled within each length (module doc); ``ceiling`` as in
    :func:`fit_decay`.

    Example:
        >>> import numpy as np
        >>> rng = np.random.default_rng(1)
        >>> ell = [16, 32, 80, 160, 320, 800]
        >>> p = decay_curve(ell, a=0.95, critical_length=120.0, b=4.0, floor=0.0625)
        >>> res = bootstrap_critical_length(ell, [rng.random(200) < q for q in p],
        ...                                 floor=0.0625, n_boot=100, seed=0)
        >>> res.low < 120 < res.high, res.lower_bound is None
        (True, True)
    """
    if not 0 < level < 1 or n_boot < 1:
        raise ValueError(f"need 0 < level < 1 and n_boot >= 1, got {level}, {n_boot}")
    ell = np.asarray(lengths, dtype=np.float64)
    outs = [np.asarray(o, dtype=np.float64).ravel() for o in outcomes]
    if len(outs) != ell.size or any(o.size == 0 for o in outs):
        raise ValueError("need one non-empty outcome array per length")
    fit = fit_decay(ell, [o.mean() for o in outs], floor, ceiling)
    rng = make_rng(seed)
    reps, failed = [], 0
    for _ in range(n_boot):
        means = [o[rng.integers(0, o.size, o.size)].mean() for o in outs]
        f = fit_decay(ell, means, floor, ceiling)
        if f.status == CROSSED and math.isfinite(f.critical_length):
            reps.append(f.critical_length)
        elif f.status == NOT_CROSSED:
            reps.append(math.inf)  # no crossing: beyond the measured range
        else:
            failed += 1  # the fit failed, or the replicate is at the floor already
    r = np.asarray(reps)
    n_inf = int(np.isinf(r).sum())
    low = high = None
    crossed = fit.crossed and math.isfinite(fit.critical_length)
    method = BC
    if fit.status != AT_FLOOR and r.size:
        # no crossing in the data: no estimate to correct towards, the plain levels
        levels, z0 = bca_levels(fit.critical_length if crossed else math.nan, r, 0.0, level)
        method = BC if math.isfinite(z0) else PERCENTILE
        q = np.quantile(r, levels, method="inverted_cdf")
        low, high = (float(v) if math.isfinite(v) else None for v in q)
    return CriticalLength(
        fit=fit, estimate=fit.critical_length if crossed else None,
        lower_bound=fit.max_length if fit.status == NOT_CROSSED else None,
        low=low, high=high, level=level, n_boot=n_boot, n_not_crossed=n_inf, n_failed=failed,
        method=method)
