"""Principal angles between two linear subspaces of R^d, in degrees (scipy's
``subspace_angles``, which takes small angles from the sines as Björck & Golub do, so nearly
identical subspaces give angles near 0 without the arccos round-off floor).

Subspaces are given by spanning *rows* ([p, d] and [q, d], like ``PCAResult.components``).

Example:
    >>> import numpy as np
    >>> principal_angles(np.eye(3)[:2], np.array([[1.0, 0, 0], [0, 1.0, 1.0]])).round(1).tolist()
    [0.0, 45.0]
"""

from __future__ import annotations

import numpy as np
from scipy.linalg import subspace_angles

from .arrays import as_matrix


def principal_angles(a: object, b: object) -> np.ndarray:
    """Principal angles in degrees, ascending, [min(rank a, rank b)], each in [0, 90]."""
    qa = as_matrix(a, "a").T
    qb = as_matrix(b, "b").T
    if qa.shape[0] != qb.shape[0]:
        raise ValueError(f"ambient dims differ: {qa.shape[0]} vs {qb.shape[0]}")
    for name, q in (("a", qa), ("b", qb)):
        if not np.abs(q).any():
            raise ValueError(f"{name} spans no subspace (all rows are zero)")
    return np.sort(np.degrees(subspace_angles(qa, qb)))
