"""When a training curve stops moving: the plateau step of a metric recorded at checkpoints.

The plateau step of a series (steps s_i, values v_i) is the first step after which the metric
stays within ``tolerance`` × its range (max − min over the series) of its final value:
the first s_i with |v_j − v_last| ≤ tolerance · (max v − min v) for every j ≥ i. A constant
series plateaus at its first step. NaN points are left out.

Example:
    >>> plateau_step([0, 1, 2, 3, 4], [10.0, 5.0, 1.5, 0.5, 0.0], 0.1)
    3
"""

from __future__ import annotations

import numpy as np


def plateau_step(steps: object, values: object, tolerance: float = 0.1) -> int | None:
    """The plateau step (module doc) of ``values`` [n] at increasing ``steps`` [n]; None when
    no value is finite. ``tolerance`` is a fraction of the range, in (0, 1]."""
    s = np.asarray(steps)
    v = np.asarray(values, dtype=np.float64)
    if s.shape != v.shape or s.ndim != 1:
        raise ValueError(f"steps {s.shape} and values {v.shape} must be one-dimensional and "
                         "of one length")
    if not 0 < tolerance <= 1:
        raise ValueError(f"tolerance must be in (0, 1], got {tolerance}")
    if (np.diff(s) <= 0).any():
        raise ValueError("steps must be increasing")
    ok = np.isfinite(v)
    s, v = s[ok], v[ok]
    if v.size == 0:
        return None
    band = tolerance * (v.max() - v.min())
    outside = np.flatnonzero(np.abs(v - v[-1]) > band)
    return int(s[0] if outside.size == 0 else s[outside[-1] + 1])
