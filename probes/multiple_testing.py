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


def holm_reach(p: object, n_null: object, index: int, alpha: float = 0.05) -> int:
    """For permutation p-values p = (1 + c) / (n + 1) (c of n controls at least as extreme as
    the effect), the most controls ``c`` that test ``index`` could have reached and still be
    rejected by Holm at ``alpha``, the other tests as they are; −1 when not even c = 0 would
    be. Its distance from the c observed is how far a verdict is from the permutation floor.

    Example:
        >>> holm_reach([1 / 21], [20], 0)  # at the floor: one more control withdraws it
        0
        >>> holm_reach([1 / 61, 1 / 61, 1 / 61], [60, 60, 60], 0)
        2
        >>> holm_reach([1 / 241, 0.5, 0.02], [240, 240, 240], 0)
        3
    """
    q = np.asarray(p, dtype=np.float64).copy()
    n = int(np.asarray(n_null).ravel()[index])
    best = -1
    for c in range(n + 1):
        q[index] = (1 + c) / (n + 1)
        if not holm(q)[index] <= alpha + 1e-12:
            break
        best = c
    return best
