"""Input coercion shared by the probes: everything is accumulated in float64.

Inputs may be any float dtype numpy accepts (float16/float32/float64, or CPU torch tensors via
``__array__``; convert bfloat16 tensors with ``.float()`` first). Nothing is modified in place.
"""

from __future__ import annotations

import numpy as np


def as_matrix(x: object, name: str = "x", min_rows: int = 1) -> np.ndarray:
    """Return ``x`` as a finite float64 array of shape [n, d] with n >= ``min_rows``."""
    a = np.asarray(x, dtype=np.float64)
    if a.ndim != 2:
        raise ValueError(f"{name} must be 2-D [n, d], got shape {a.shape}")
    if a.shape[0] < min_rows:
        raise ValueError(f"{name} needs at least {min_rows} rows, got {a.shape[0]}")
    if a.shape[1] < 1:
        raise ValueError(f"{name} has no columns")
    if not np.isfinite(a).all():
        raise ValueError(f"{name} contains NaN or inf")
    return a


def as_vector(y: object, name: str = "y", n: int | None = None) -> np.ndarray:
    """Return ``y`` as a finite float64 vector [n] (a trailing singleton axis is squeezed)."""
    a = np.asarray(y, dtype=np.float64)
    if a.ndim == 2 and a.shape[1] == 1:
        a = a[:, 0]
    if a.ndim != 1:
        raise ValueError(f"{name} must be 1-D, got shape {a.shape}")
    if n is not None and a.shape[0] != n:
        raise ValueError(f"{name} has {a.shape[0]} entries, expected {n}")
    if not np.isfinite(a).all():
        raise ValueError(f"{name} contains NaN or inf")
    return a
