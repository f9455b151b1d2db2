"""The key frame of one head: how mutually orthogonal its key vectors are (Paper I's sense),
how that compares with random vectors and with the best any frame of its shape can do, and --
a different property, under its own name -- how isotropically the keys fill the head's
dimensions.

A *frame* is m key vectors in R^d, one per hypothesis (a wind tunnel's hypothesis tokens) or per
distinct token, as rows of K [m, d].

**Orthogonality (the headline; Paper I).** Each row is scaled to unit length (K̂; no centring:
a component every key shares makes the keys *less* orthogonal and is counted, as in Paper I's
statistic), C = K̂K̂ᵀ, and

* ``mean_abs_cos`` = mean over the m(m−1) ordered pairs i ≠ j of |C_ij| (Paper I v3's
  "mean |off-diagonal cosine|", spec §1.9);
* **orthogonality score** = 1 − ``mean_abs_cos`` in [0, 1]: 1 exactly when the keys are
  pairwise orthogonal, whatever their norms; 0 when all lie on one line.

**Chance** (:func:`random_abs_cos`): for independent isotropic vectors every pair has
E|cos| = Γ(d/2) / (√π·Γ((d+1)/2)) (≈ √(2/(πd)), exact for any m), so random vectors of the
frame's shape score 1 − E|cos| (``chance``), and ``reduction_vs_random`` = 1 − mean_abs_cos /
E|cos| (Paper I: 0.052 against 0.082 for random, a 37 % reduction).

**More keys than dimensions** (m > d): m vectors in R^d cannot be mutually orthogonal. The
Welch bound (:func:`welch_bound`) W = √((m − d) / (d(m − 1))) is the smallest possible
*largest* |cos| of m unit vectors in R^d, attained with every |cos| = W by an equiangular tight
frame; so ``ceiling`` = 1 − W is the score of the most uniformly orthogonal frame of that shape
(1 for m ≤ d) and ``vs_ceiling`` = score / ceiling. (A frame can score above the ceiling only by
making some keys nearly parallel -- duplicates -- while others are orthogonal; the hard floor
is mean |cos| ≥ mean cos² ≥ (m − d)/(d(m − 1)) = W².) ``orthogonalisable`` is m ≤ d.

**Isotropy** (a different property: how evenly the frame uses its dimensions). The rows are
centred on their mean (``centre=True``: a shared component cannot route, softmax being
shift-invariant), then scaled to unit length; with σ the singular values and
n = min(m − 1, d) (min(m, d) uncentred), **isotropy** = (PR − 1) / (n − 1), PR = (Σσ²)² / Σσ⁴
the participation ratio: 1 when the n non-zero σ are equal, 0 for rank 1. Exactly orthogonal
keys of unequal norms are *not* isotropic in this sense once centred, and for m > d isotropy 1
is a tight frame, not an orthogonal one. Its chance level (:func:`random_isotropy`): for m
independent directions PR ≈ m / (1 + (m−1)·E cos²), E cos² = 1/d uncentred (exact) and
≈ 1/(m−1)² + 1/d centred (within 0.01 of Gaussian frames for m ≥ 9). **Effective rank** =
exp(H(σ / Σσ)) (Roy & Vetterli 2007, nats); **utilisation** = effective rank / d.

Example:
    >>> import numpy as np
    >>> from bayesgeom.probes.key_frame import frame_orthogonality, isotropy, welch_bound
    >>> keys = np.diag([1.0, 9.0, 100.0]) @ np.eye(3, 8)  # orthogonal keys, norms 1 to 100
    >>> round(frame_orthogonality(keys), 6), round(isotropy(keys), 3)
    (1.0, 0.024)
    >>> round(frame_orthogonality(np.eye(3, 8) + 2.0), 3)  # one big shared offset
    0.027
    >>> round(welch_bound(20, 16), 4), welch_bound(16, 16)
    (0.1147, 0.0)
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from .key_orthogonality import exact_abs_cos_expectation


def _frame(keys: np.ndarray, min_rows: int) -> np.ndarray:
    k = np.asarray(keys, dtype=np.float64)
    if k.ndim != 2 or k.shape[0] < min_rows or k.shape[1] < 2:
        raise ValueError(f"a frame needs a [m, d] matrix with d >= 2 and m >= {min_rows}, got "
                         f"shape {k.shape}")
    if not np.isfinite(k).all():
        raise ValueError("a frame needs finite key vectors")
    return k


def _unit(k: np.ndarray, what: str) -> np.ndarray:
    norms = np.linalg.norm(k, axis=1, keepdims=True)
    if (norms <= 1e-12 * max(1.0, float(np.abs(k).max()))).any():
        raise ValueError(f"a frame needs non-zero key vectors{what}")
    return k / norms


def mean_abs_cos(keys: np.ndarray) -> float:
    """Mean |cos| over the ordered pairs i ≠ j of the rows of ``keys`` [m, d] (no centring)."""
    u = _unit(_frame(keys, 2), "")
    c = u @ u.T
    m = c.shape[0]
    return float(np.abs(c[~np.eye(m, dtype=bool)]).mean())


def frame_orthogonality(keys: np.ndarray) -> float:
    """The orthogonality score 1 − mean |cos| in [0, 1] of the rows of ``keys`` [m, d]."""
    return 1.0 - mean_abs_cos(keys)


def random_abs_cos(d: int) -> float:
    """E|cos| between independent isotropic vectors in R^d (exact), for any number of rows."""
    return exact_abs_cos_expectation(d)


def welch_bound(m: int, d: int) -> float:
    """√((m − d)/(d(m − 1))): the smallest largest |cos| of m unit vectors in R^d (0 for m ≤ d)."""
    if m < 2 or d < 1:
        raise ValueError(f"need m >= 2 and d >= 1, got m={m}, d={d}")
    return math.sqrt((m - d) / (d * (m - 1))) if m > d else 0.0


def _n(shape: tuple[int, ...], centre: bool) -> int:
    return min(shape[0] - 1 if centre else shape[0], shape[1])


def _isotropy_rows(keys: np.ndarray, centre: bool) -> np.ndarray:
    k = _frame(keys, 3 if centre else 2)
    return _unit(k - k.mean(0) if centre else k,
                 " (after centring: no key equal to the frame's mean)" if centre else "")


def isotropy(keys: np.ndarray, centre: bool = True) -> float:
    """The isotropy (PR − 1)/(n − 1) in [0, 1] of the rows of ``keys`` [m, d] (module doc)."""
    s2 = np.linalg.svd(_isotropy_rows(keys, centre), compute_uv=False) ** 2
    n = _n(np.asarray(keys).shape, centre)
    pr = s2.sum() ** 2 / (s2 ** 2).sum()
    return float(np.clip((pr - 1) / (n - 1), 0.0, 1.0)) if n > 1 else 1.0


def random_isotropy(m: int, d: int, centre: bool = True) -> float:
    """The chance-level isotropy of m random directions in R^d (module doc)."""
    if m < (3 if centre else 2) or d < 2:
        raise ValueError(f"need d >= 2 and m >= {3 if centre else 2}, got m={m}, d={d}")
    cos2 = 1 / (m - 1) ** 2 + 1 / d if centre else 1 / d
    pr = m / (1 + (m - 1) * cos2)
    n = _n((m, d), centre)
    return float(np.clip((pr - 1) / (n - 1), 0.0, 1.0)) if n > 1 else 1.0


def effective_rank(keys: np.ndarray, centre: bool = True) -> float:
    """exp(entropy of the normalised singular values) of the unit rows of ``keys`` [m, d]."""
    s = np.linalg.svd(_isotropy_rows(keys, centre), compute_uv=False)
    p = s[s > 0] / s.sum()
    return float(np.exp(-(p * np.log(p)).sum()))


@dataclass(frozen=True)
class FrameScore:
    """One head's frame: ``m`` keys in ``d`` dimensions, every number of the module doc.

    ``orthogonality`` = 1 − ``mean_abs_cos`` (the headline), ``chance`` = 1 − ``chance_abs_cos``
    (random vectors of the same shape), ``ceiling`` = 1 − ``welch`` (the best uniform frame of
    this shape); ``isotropy`` / ``isotropy_chance``: the participation-ratio score of the
    centred frame and its chance level."""

    m: int
    d: int
    mean_abs_cos: float
    orthogonality: float
    chance_abs_cos: float
    chance: float
    reduction_vs_random: float
    orthogonalisable: bool
    welch: float
    ceiling: float
    vs_ceiling: float
    isotropy: float
    isotropy_chance: float
    effective_rank: float
    utilisation: float


def score_frame(keys: np.ndarray) -> FrameScore:
    """Every number of the module doc for one frame ``keys`` [m, d] (m ≥ 3 for isotropy).

    Example:
        >>> import numpy as np
        >>> s = score_frame(np.random.default_rng(0).normal(size=(8, 32)))
        >>> s.m, s.d, round(s.chance, 3), s.orthogonalisable, s.utilisation <= 8 / 32
        (8, 32, 0.858, True, True)
    """
    m, d = np.asarray(keys).shape
    a = mean_abs_cos(keys)
    r = random_abs_cos(d)
    w = welch_bound(m, d)
    er = effective_rank(keys)
    return FrameScore(m=m, d=d, mean_abs_cos=a, orthogonality=1.0 - a, chance_abs_cos=r,
                      chance=1.0 - r, reduction_vs_random=1.0 - a / r, orthogonalisable=m <= d,
                      welch=w, ceiling=1.0 - w, vs_ceiling=(1.0 - a) / (1.0 - w),
                      isotropy=isotropy(keys), isotropy_chance=random_isotropy(m, d),
                      effective_rank=er, utilisation=er / d)
