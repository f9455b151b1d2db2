"""Multiple-testing adjustment: Holm's step-down procedure (family-wise error control).

``holm(p)``: the i-th smallest of m p-values is multiplied by (m − i + 1), a running maximum
keeps the adjusted values in the order of the raw ones, and they are capped at 1. A hypothesis
is rejected at family-wise level α when its adjusted p ≤ α. NaNs (tests that could not be run)
stay NaN and do not count toward m.

Example:
    >>> holm([0.01, 0.04, 0.03, 0.005]).round(6).tolist()
    [0.03, 0.06, 0.06, 0.02]
    >>> holm([0.5, float("nan"), 0.01]).tolist()
    [0.5, nan, 0.02]
"""

from __future__ import annotations

import numpy as np


def holm(p: object) -> np.ndarray:
    """Holm-adjusted p-values (float64, the shape of ``p``); NaN in, NaN out."""
    a = np.asarray(p, dtype=np.float64)
    flat = a.ravel()
    ok = np.isfinite(flat)
    q = flat[ok]
    if ((q < 0) | (q > 1)).any():
        raise ValueError("p-values must lie in [0, 1]")
    m = q.size
    order = np.argsort(q, kind="stable")
    adj = np.minimum(np.maximum.accumulate((m - np.arange(m)) * q[order]), 1.0)
    out = np.full(flat.shape, np.nan)
    fill = np.empty(m)
    fill[order] = adj
    out[ok] = fill
    return out.reshape(a.shape)
