"""Calibration of a model's uncertainty against the exact Bayes posterior, in bits.

For per-sample model entropies H_model and exact entropies H_Bayes (bits): ``mae`` is the
per-sample mean |H_model − H_Bayes| (Paper I's per-sample variant, ≥ the curve variant), ``corr``
the Pearson correlation (NaN when either side is constant or n < 3), and the two means.

Example:
    >>> import numpy as np
    >>> c = calibration(np.array([1.0, 0.5, 0.1]), np.array([1.0, 0.4, 0.0]))
    >>> round(c.mae, 4), round(c.corr, 4), c.n
    (0.0667, 0.9987, 3)
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from .measures import pearson


@dataclass(frozen=True)
class Calibration:
    """Model-vs-Bayes entropy agreement over ``n`` samples (bits)."""

    mae: float
    corr: float
    n: int
    h_model: float
    h_bayes: float


def calibration(h_model: object, h_bayes: object) -> Calibration:
    """:class:`Calibration` of entropies ``h_model`` [n] against ``h_bayes`` [n] (bits)."""
    m = np.asarray(h_model, dtype=np.float64)
    b = np.asarray(h_bayes, dtype=np.float64)
    if m.shape != b.shape or m.ndim != 1:
        raise ValueError(f"h_model {m.shape} and h_bayes {b.shape} must be equal-length vectors")
    return Calibration(mae=float(np.abs(m - b).mean()), corr=float(pearson(m, b, min_n=3)),
                       n=int(m.size), h_model=float(m.mean()), h_bayes=float(b.mean()))


def calibration_by_group(h_model: object, h_bayes: object, group: object,
                         ) -> dict[str, Calibration]:
    """:func:`calibration` within each value of ``group`` [n] (keys: the group as a string,
    in increasing order)."""
    m = np.asarray(h_model, dtype=np.float64)
    b = np.asarray(h_bayes, dtype=np.float64)
    g = np.asarray(group)
    return {str(k): calibration(m[g == k], b[g == k]) for k in np.unique(g)}
