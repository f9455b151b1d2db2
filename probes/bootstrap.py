"""Seeded nonparametric bootstrap: resample indices, BCa intervals, the mean's CI.

Resampling is over the rows of the data (prompts, sequences): each replicate draws ``n`` row
indices with replacement from a ``numpy.random.Generator`` seeded by the caller, so results are
reproducible.

**Intervals.** :func:`bca_interval` is Efron's bias-corrected and accelerated interval (as
``scipy.stats.bootstrap(method="BCa")`` computes it, tested equal on the same resamples): with
p₀ the share of replicates below the full-sample estimate (ties count half), z₀ = Φ⁻¹(p₀), the
acceleration â = Σdᵢ³ / (6 (Σdᵢ²)^{3/2}) from the jackknife (dᵢ = mean of the leave-one-out
values − the i-th), and z = Φ⁻¹((1 ∓ level)/2), the ends are the replicates' quantiles at
Φ(z₀ + (z₀ + z) / (1 − â (z₀ + z))) (linear interpolation). Without jackknife values â = 0:
the bias-corrected percentile interval ("bc"). The statistics here compute their replicates
themselves -- several statistics from one set of resamples (PC1 and PC1+PC2 from one spectrum,
Spearman and Pearson from one draw, every layer's entropy and the focusing ratio from one
draw), chunked by memory -- so this module takes the replicate array and the jackknife values
rather than handing a statistic to scipy, which would redraw the resamples per statistic.

**An interval that excludes its estimate.** The bias correction shifts the interval *away*
from the side the replicates crowd: for the usual |â (z₀ + z)| < 1, a BCa interval contains the
estimate exactly when p₀ lies in [(1 − level)/2, (1 + level)/2], the same condition under which
the naive percentile interval does. So where the percentile interval lies wholly above its
estimate (a variance share from fewer rows than dimensions: a resample's duplicated rows
concentrate the spectrum) the BCa interval lies below it. Such an interval is kept, marked
(``contains_estimate`` False; :data:`EXCLUDES_NOTE`), and must not be read as evidence. When
every replicate lies on one side (p₀ = 0 or 1) the correction is undefined and the percentile
ends are kept (``method`` "percentile"), equally marked.

Example:
    >>> rng = np.random.default_rng(0)
    >>> x = rng.exponential(size=60)
    >>> iv = mean_interval(x, 2000, seed=1)
    >>> iv.method, iv.contains_estimate, bool(iv.low < x.mean() < iv.high)
    ('bca', True, True)
    >>> percentile_interval(0.18, np.linspace(0.19, 0.29, 101)).note
    'interval excludes its estimate: not evidence'
"""

from __future__ import annotations

import math
from dataclasses import asdict, dataclass

import numpy as np

from .arrays import as_vector

PERCENTILE, BC, BCA = "percentile", "bc", "bca"
#: what a report prints beside an interval that does not contain its estimate
EXCLUDES_NOTE = "interval excludes its estimate: not evidence"
#: how each ``method`` is named in reports
METHOD_NAMES = {PERCENTILE: "percentile", BC: "bias-corrected percentile", BCA: "BCa"}


def excludes(value: float, low: float, high: float) -> bool:
    """True when the finite interval [low, high] does not contain the finite ``value`` (the
    flag of :data:`EXCLUDES_NOTE`; an undefined number or interval is not flagged)."""
    if not all(math.isfinite(v) for v in (value, low, high)):
        return False
    return not low <= value <= high


@dataclass(frozen=True)
class Interval:
    """A point estimate with a bootstrap interval.

    ``estimate`` is the statistic on the full sample; ``bootstrap_mean`` the mean of the
    replicates (Paper III reports this one); ``low``/``high`` the interval at ``level``;
    ``method`` which interval it is ("bca", "bc" or "percentile", module doc) with its bias
    correction ``z0`` and acceleration (NaN where not used). ``contains_estimate`` is computed
    from the others (a value passed in is ignored): False also when the bounds are undefined.
    """

    estimate: float
    low: float
    high: float
    level: float
    n_resamples: int
    bootstrap_mean: float
    method: str = PERCENTILE
    z0: float = math.nan
    acceleration: float = math.nan
    contains_estimate: bool = True

    def __post_init__(self) -> None:
        object.__setattr__(self, "contains_estimate", self.contains(self.estimate))

    def contains(self, value: float) -> bool:
        return bool(self.low <= value <= self.high)

    @property
    def excludes_estimate(self) -> bool:
        """True when finite bounds leave out the finite estimate: not evidence."""
        return excludes(self.estimate, self.low, self.high)

    @property
    def note(self) -> str:
        """:data:`EXCLUDES_NOTE` when the interval excludes its estimate, else ""."""
        return EXCLUDES_NOTE if self.excludes_estimate else ""

    @property
    def width(self) -> float:
        return self.high - self.low

    def to_dict(self) -> dict[str, float | int | str | bool]:
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


def jackknife_indices(n: int) -> np.ndarray:
    """Leave-one-out row indices, int64 [n, n − 1]: row i is range(n) without i.

    Example:
        >>> jackknife_indices(3).tolist()
        [[1, 2], [0, 2], [0, 1]]
    """
    if n < 2:
        raise ValueError(f"a jackknife needs n >= 2, got {n}")
    j = np.arange(n - 1)[None, :]
    return j + (j >= np.arange(n)[:, None])


def _check_level(level: float) -> None:
    if not 0.0 < level < 1.0:
        raise ValueError(f"level must be in (0, 1), got {level}")


def percentile_interval(estimate: float, replicates: np.ndarray, level: float = 0.95) -> Interval:
    """The naive percentile interval of 1-D ``replicates`` around the full-sample ``estimate``
    (kept for comparison; the statistics here report :func:`bca_interval`).

    Non-finite replicates (e.g. a correlation of a constant resample) are dropped; if none is
    left the bounds are NaN.
    """
    _check_level(level)
    r = np.asarray(replicates, dtype=np.float64).ravel()
    n_total = int(r.size)
    r = r[np.isfinite(r)]
    if r.size == 0:
        nan = float("nan")
        return Interval(float(estimate), nan, nan, level, n_total, nan)
    lo, hi = np.quantile(r, [(1.0 - level) / 2.0, (1.0 + level) / 2.0])
    return Interval(float(estimate), float(lo), float(hi), level, n_total, float(r.mean()))


def acceleration(jackknife: object) -> float:
    """BCa's â from leave-one-out values [n] (non-finite ones dropped; 0 if they agree)."""
    j = np.asarray(jackknife, dtype=np.float64).ravel()
    j = j[np.isfinite(j)]
    d = j.mean() - j if j.size else j
    ss = float((d**2).sum())
    return 0.0 if ss == 0.0 else float((d**3).sum() / (6.0 * ss**1.5))


def bca_interval(estimate: float, replicates: np.ndarray, jackknife: object | None = None,
                 level: float = 0.95) -> Interval:
    """BCa interval of 1-D ``replicates`` around ``estimate`` (module doc); ``jackknife``: the
    statistic on each leave-one-out sample [n], or None for the bias-corrected percentile
    interval (â = 0) where a jackknife is not practical.

    Non-finite replicates are dropped (``n_resamples`` counts them all); no finite replicate
    or a non-finite estimate gives NaN bounds.

    Example:
        >>> reps = np.linspace(0.0, 1.0, 1001)
        >>> iv = bca_interval(0.5, reps)  # unbiased, symmetric: the percentile interval
        >>> iv.method, round(iv.low, 3), round(iv.high, 3), iv.z0
        ('bc', 0.025, 0.975, 0.0)
        >>> round(bca_interval(0.4, reps).high, 3)  # replicates above the estimate: shifted down
        0.927
    """
    _check_level(level)
    pct = percentile_interval(estimate, replicates, level)
    r = np.asarray(replicates, dtype=np.float64).ravel()
    r = r[np.isfinite(r)]
    method = BC if jackknife is None else BCA
    if r.size == 0 or not math.isfinite(estimate):
        nan = math.nan
        return Interval(float(estimate), nan, nan, level, pct.n_resamples, pct.bootstrap_mean,
                        method)
    a = 0.0 if jackknife is None else acceleration(jackknife)
    levels, z0 = bca_levels(estimate, r, a, level)
    if not math.isfinite(z0):  # every replicate on one side: no correction defined
        return Interval(pct.estimate, pct.low, pct.high, level, pct.n_resamples,
                        pct.bootstrap_mean, PERCENTILE, z0)
    lo, hi = np.quantile(r, levels)
    return Interval(float(estimate), float(lo), float(hi), level, pct.n_resamples,
                    pct.bootstrap_mean, method, z0, math.nan if jackknife is None else a)


def bca_levels(estimate: float, replicates: object, a: float = 0.0, level: float = 0.95,
               ) -> tuple[tuple[float, float], float]:
    """((low, high) quantile levels of the replicates, z₀) of the BCa interval with
    acceleration ``a`` (module doc); replicates may be ±inf (they count on their side). When
    z₀ is infinite (or the estimate is not finite: z₀ NaN) the levels are the percentile
    interval's.

    Example:
        >>> bca_levels(0.5, np.linspace(0, 1, 1001))[0]
        (0.025, 0.975)
    """
    from scipy.stats import norm  # here, not at the top: make_rng's importers stay light

    _check_level(level)
    r = np.asarray(replicates, dtype=np.float64).ravel()
    p0 = float(((r < estimate).sum() + 0.5 * (r == estimate).sum()) / r.size)
    z0 = float(norm.ppf(p0))
    plain = ((1.0 - level) / 2.0, (1.0 + level) / 2.0)
    if not math.isfinite(estimate):
        return plain, math.nan
    if not math.isfinite(z0):
        return plain, z0
    out = []
    for z in norm.ppf(plain):
        w = z0 + z
        denom = 1.0 - a * w
        out.append(float(norm.cdf(z0 + w / denom)) if denom > 0 else float(w > 0))
    return (out[0], out[1]), z0


def mean_interval(
    values: object,
    n_resamples: int = 1000,
    level: float = 0.95,
    seed: int | np.random.Generator | None = 0,
) -> Interval:
    """BCa interval of the mean of a 1-D sample (vectorised over replicates; the jackknife of
    a mean is (Σx − xᵢ)/(n − 1))."""
    v = as_vector(values, "values")
    idx = resample_indices(v.size, n_resamples, seed)
    jack = (v.sum() - v) / (v.size - 1) if v.size > 1 else None
    return bca_interval(float(v.mean()), v[idx].mean(axis=1), jack, level)
