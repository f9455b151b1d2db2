"""Linear centred kernel alignment (Kornblith et al. 2019) between two representations.

CKA(X, Y) = ‖Ỹᵀ X̃‖²_F / (‖X̃ᵀ X̃‖_F ‖Ỹᵀ Ỹ‖_F) with X̃, Ỹ column-centred. X [n, p] and Y [n, q]
must describe the same n samples in the same order. In [0, 1]; invariant to orthogonal
transforms and isotropic scaling of either side, not to arbitrary invertible linear maps.
The Gram form ‖K L‖ with K = X̃X̃ᵀ is used when n is smaller than the feature counts.
"""

from __future__ import annotations

import numpy as np

from .arrays import as_matrix


def linear_cka(x: object, y: object) -> float:
    """Linear CKA of two [n, ·] representation matrices; NaN if either is constant."""
    a = as_matrix(x, "x", min_rows=2)
    b = as_matrix(y, "y", min_rows=2)
    if a.shape[0] != b.shape[0]:
        raise ValueError(f"x and y need the same samples: {a.shape[0]} vs {b.shape[0]} rows")
    a = a - a.mean(axis=0)
    b = b - b.mean(axis=0)
    n = a.shape[0]
    if n < min(a.shape[1], b.shape[1]):
        ka, kb = a @ a.T, b @ b.T
        num = float((ka * kb).sum())
        den = float(np.linalg.norm(ka) * np.linalg.norm(kb))
    else:
        num = float(np.linalg.norm(b.T @ a) ** 2)
        den = float(np.linalg.norm(a.T @ a) * np.linalg.norm(b.T @ b))
    return float("nan") if den == 0.0 else num / den
