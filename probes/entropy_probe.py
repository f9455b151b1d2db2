"""Entropy-regression probe: ridge regression of a target (entropy, bits) on activations,
scored by K-fold cross-validated held-out R², per layer and per site.

Protocol (nested CV; see :mod:`probes.ridge` for the objective and the scale of α):
1. Samples get balanced, seeded outer folds.
2. For each outer fold, α is chosen from ``alphas`` by an inner K-fold CV on the outer training
   set (minimum pooled inner squared error; ties go to the larger α); the model is refitted on
   the whole outer training set with that α and predicts the held-out fold. A single-element
   grid skips the inner CV (fixed α).
3. ``r2`` is the pooled out-of-fold R² = 1 − Σ(y − ŷ)² / Σ(y − ȳ)² over all samples (every
   sample predicted once, by a model that never saw it); ``fold_r2`` lists the per-fold values
   (each relative to its own fold's mean). Held-out R² can be negative (worse than the mean).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from .arrays import as_matrix, as_vector
from .bootstrap import make_rng
from .ridge import ridge_path
from .splits import fold_assignments

DEFAULT_ALPHAS: tuple[float, ...] = tuple(float(a) for a in np.logspace(-4, 4, 17))


@dataclass(frozen=True)
class ProbeConfig:
    """Cross-validation settings; α in units of the per-sample objective (see probes.ridge)."""

    n_folds: int = 5
    inner_folds: int = 5
    alphas: tuple[float, ...] = DEFAULT_ALPHAS
    standardize: bool = True
    seed: int = 0


@dataclass(frozen=True, eq=False)  # holds arrays: compare fields explicitly
class ProbeResult:
    """Held-out performance of the probe on one activation set (n samples, d features)."""

    n: int
    d: int
    r2: float
    fold_r2: tuple[float, ...]
    alphas: tuple[float, ...]
    predictions: np.ndarray | None = field(default=None, repr=False)

    def to_record(self) -> dict[str, Any]:
        """Flat record (no predictions) for a table."""
        fr = np.asarray(self.fold_r2)
        return {
            "n": self.n,
            "d": self.d,
            "r2": self.r2,
            "r2_fold_mean": float(np.nanmean(fr)) if np.isfinite(fr).any() else float("nan"),
            "r2_fold_std": float(np.nanstd(fr)) if np.isfinite(fr).any() else float("nan"),
            "alpha_median": float(np.median(self.alphas)),
        }


def r2_score(y: np.ndarray, pred: np.ndarray) -> float:
    """1 − SSE/SST relative to y's own mean; NaN when y is constant."""
    sst = float(((y - y.mean()) ** 2).sum())
    return float("nan") if sst == 0.0 else 1.0 - float(((y - pred) ** 2).sum()) / sst


def select_alpha(
    x: np.ndarray,
    y: np.ndarray,
    alphas: Sequence[float],
    n_folds: int,
    standardize: bool,
    rng: np.random.Generator,
) -> float:
    """The α with the smallest pooled K-fold squared error on (x, y); ties → the larger α."""
    grid = sorted((float(a) for a in alphas), reverse=True)
    if len(grid) == 1:
        return grid[0]
    folds = fold_assignments(x.shape[0], n_folds, rng)
    sse = np.zeros(len(grid))
    for k in range(n_folds):
        tr, te = folds != k, folds == k
        for i, m in enumerate(ridge_path(x[tr], y[tr], grid, standardize)):
            sse[i] += float(((y[te] - m.predict(x[te])) ** 2).sum())
    return grid[int(np.argmin(sse))]


def entropy_probe(x: object, target: object, config: ProbeConfig | None = None) -> ProbeResult:
    """Cross-validated ridge probe of ``target`` [n] from ``x`` [n, d] (see module doc)."""
    cfg = config or ProbeConfig()
    a = as_matrix(x)
    y = as_vector(target, "target", n=a.shape[0])
    n = a.shape[0]
    min_train = n - -(-n // cfg.n_folds)
    if len(cfg.alphas) > 1 and min_train < 2 * cfg.inner_folds:
        raise ValueError(
            f"{n} samples are too few for {cfg.n_folds} outer x {cfg.inner_folds} inner folds"
        )
    rng = make_rng(cfg.seed)
    folds = fold_assignments(n, cfg.n_folds, rng)
    pred = np.empty(n)
    fold_r2, chosen = [], []
    for k in range(cfg.n_folds):
        tr, te = folds != k, folds == k
        alpha = select_alpha(a[tr], y[tr], cfg.alphas, cfg.inner_folds, cfg.standardize, rng)
        (model,) = ridge_path(a[tr], y[tr], [alpha], cfg.standardize)
        pred[te] = model.predict(a[te])
        fold_r2.append(r2_score(y[te], pred[te]))
        chosen.append(alpha)
    return ProbeResult(n, a.shape[1], r2_score(y, pred), tuple(fold_r2), tuple(chosen), pred)


def entropy_probe_table(
    activations: Mapping[str | tuple[str, int], object],
    target: object,
    config: ProbeConfig | None = None,
) -> list[dict[str, Any]]:
    """Run :func:`entropy_probe` on each activation set and return tidy records.

    Keys are a site name or a ``(site, layer)`` pair; each record has ``site``, ``layer``
    (None for a bare site name), ``n``, ``d``, ``r2``, ``r2_fold_mean``, ``r2_fold_std`` and
    ``alpha_median``. Every set is probed with the same folds (same seed and n).
    """
    records = []
    for key, x in activations.items():
        site, layer = (key[0], int(key[1])) if isinstance(key, tuple) else (key, None)
        res = entropy_probe(x, target, config)
        records.append({"site": site, "layer": layer, **res.to_record()})
    return records
