"""The position-only control: how much of an entropy target position alone explains.

On a wind tunnel whose Bayes entropy is a function of position (bijection without replacement:
log2(V − k + 1) at the k-th key), any representation that knows the position "predicts" the
entropy, so a probe R² or a correlation with PC1 says nothing about Bayesian geometry until it
is read beside what position alone gives, and beside the correlation that is left once position
is accounted for.

* :func:`position_design`: the features of a position-only predictor [n, p] -- one-hot of the
  position when every position has about ten prompts or more (at most n/10 distinct ones),
  else a cubic polynomial in the standardised rank of the position (75 wind-tunnel prompts over
  19 query positions, or text prompts of many lengths: a one-hot design would absorb chance
  variance; ranks keep a few very long prompts from dominating a fold; the cubic fits
  bijection's log2(V − k + 1) with R² 0.998).
* :func:`position_only_r2`: the cross-validated ridge R² of a target from that design alone;
  at or above :data:`POSITION_CONFOUND_R2` the target counts as a function of position.
* :func:`position_residual`: a target minus its least-squares fit on that design (intercept
  included): the part of the target position cannot explain.
* :func:`partial_spearman`: Spearman ρ(x, y | position), the Pearson correlation of the ranks
  of x and y after each is residualised on the position design (for one-hot positions: the
  pooled within-position rank correlation). NaN when either residual is constant.
"""

from __future__ import annotations

import numpy as np

from ..infotheory import pearson
from .arrays import as_vector
from .correlation import average_ranks
from .entropy_probe import ProbeConfig, entropy_probe

#: position-only R² at or above which a target counts as a function of position (a confound)
POSITION_CONFOUND_R2 = 0.95


def position_design(positions: object) -> tuple[np.ndarray, str]:
    """(features [n, p] float64, a short description). See the module doc.

    Example:
        >>> x, kind = position_design(np.repeat([0, 2, 4], 10))
        >>> x.shape, kind
        ((30, 3), 'one-hot position (3 levels)')
    """
    p = as_vector(positions, "positions")
    levels = np.unique(p)
    if levels.size <= max(1, p.size // 10):
        return (p[:, None] == levels[None, :]).astype(np.float64), \
            f"one-hot position ({levels.size} levels)"
    r = average_ranks(p)
    z = (r - r.mean()) / (r.std() or 1.0)
    return np.stack([z, z ** 2, z ** 3], axis=1), "cubic in position rank"


def position_only_r2(positions: object, target: object, probe: ProbeConfig | None = None,
                     ) -> tuple[float, str]:
    """(cross-validated ridge R² of ``target`` [n] from :func:`position_design` of
    ``positions`` [n] alone, the design's description)."""
    x, design = position_design(positions)
    return entropy_probe(x, as_vector(target, "target", n=x.shape[0]), probe or ProbeConfig()).r2, \
        design


def position_residual(target: object, positions: object) -> np.ndarray:
    """``target`` [n] minus its least-squares fit on :func:`position_design` (with intercept)."""
    y = as_vector(target, "target")
    x, _ = position_design(as_vector(positions, "positions", n=y.size))
    design = np.column_stack([np.ones(y.size), x])
    coef, *_ = np.linalg.lstsq(design, y, rcond=None)
    return y - design @ coef


def partial_spearman(x: object, y: object, positions: object) -> float:
    """Spearman ρ(x, y | position) (module doc); [n], [n], [n] -> float.

    Example:
        >>> rng = np.random.default_rng(0)
        >>> pos = np.repeat(np.arange(5), 20)
        >>> h = pos + rng.normal(size=100)             # entropy: position plus noise
        >>> only_pos = pos + 0.01 * rng.normal(size=100)
        >>> tracks_h = h + 0.1 * rng.normal(size=100)
        >>> abs(partial_spearman(only_pos, h, pos)) < 0.3, partial_spearman(tracks_h, h, pos) > 0.9
        (True, True)
    """
    a = as_vector(x, "x")
    b = as_vector(y, "y", n=a.size)
    p = as_vector(positions, "positions", n=a.size)
    ra, rb = position_residual(average_ranks(a), p), position_residual(average_ranks(b), p)
    scale = max(1.0, float(a.size))
    if np.abs(ra).max() <= 1e-9 * scale or np.abs(rb).max() <= 1e-9 * scale:
        return float("nan")
    return float(pearson(ra, rb))
