"""Priors over an ordered hypothesis space 0..H-1 (a task's answers, in hypothesis order).

With the centre ``c = (H - 1) / 2`` and ``z = (h - c) / (scale · H)`` (``scale`` a fraction of
the space's width):

* ``uniform``: p(h) = 1/H (returned as None: nothing H-sized is stored);
* ``gaussian``: p(h) ∝ exp(-z² / 2);
* ``generalised_gaussian``: p(h) ∝ exp(-|z|^shape) (shape 2 is a Gaussian of standard
  deviation scale·H/√2, shape 1 a Laplace, large shapes approach uniform on |z| < 1).

Normalised in float64 through the log-sum-exp, so far tails underflow to exactly 0 rather than
overflowing the sum.

Example:
    >>> p = prior_weights("gaussian", 5, scale=0.2)
    >>> [round(float(x), 4) for x in p]
    [0.0545, 0.2442, 0.4026, 0.2442, 0.0545]
    >>> prior_weights("uniform", 10**6) is None
    True
"""

from __future__ import annotations

from typing import Literal

import numpy as np

PriorKind = Literal["uniform", "gaussian", "generalised_gaussian"]
PRIORS: tuple[str, ...] = ("uniform", "gaussian", "generalised_gaussian")


def prior_weights(kind: str, H: int, scale: float = 0.25,
                  shape: float = 1.0) -> np.ndarray | None:
    """The prior [H] float64 (sums to 1) of ``kind`` over hypotheses 0..H-1, or None for
    ``uniform``. ``scale`` > 0 is the width as a fraction of H; ``shape`` > 0 the exponent of
    ``generalised_gaussian``."""
    if kind == "uniform":
        return None
    if kind not in PRIORS:
        raise ValueError(f"prior must be one of {', '.join(PRIORS)}, got {kind!r}")
    if not scale > 0 or not shape > 0:
        raise ValueError(f"prior scale and shape must be > 0, got {scale}, {shape}")
    with np.errstate(over="ignore", divide="ignore", invalid="ignore"):
        z = (np.arange(H, dtype=np.float64) - (H - 1) / 2) / (scale * H)
        logw = -0.5 * z * z if kind == "gaussian" else -np.abs(z) ** shape
        logw -= logw.max()  # the largest weight is 1 before normalising: no precision lost
        w = np.exp(logw)
        w /= w.sum()
    if not (np.isfinite(w).all() and abs(w.sum() - 1) < 1e-9):
        raise ValueError(f"a {kind} prior of scale {scale:g} (shape {shape:g}) over {H} "
                         "hypotheses is not a finite distribution (its log-weights overflow); "
                         "give a larger prior_scale")
    return w


def sample_from(rng: np.random.Generator, prior: np.ndarray | None, H: int,
                size: tuple[int, ...]) -> np.ndarray:
    """``size`` draws (int64) from ``prior`` over 0..H-1 (uniform when None), by inverse CDF."""
    if prior is None:
        return rng.integers(0, H, size=size)
    cdf = np.cumsum(prior)
    u = rng.random(size) * cdf[-1]
    return np.minimum(np.searchsorted(cdf, u, side="right"), H - 1).astype(np.int64)
