"""Principal angles between two linear subspaces of R^d, in degrees.

Subspaces are given by spanning *rows* ([p, d] and [q, d], like ``PCAResult.components``); they
are orthonormalised internally. The cosines are the singular values of Q_aᵀ Q_b; small angles
are taken from the sines (Björck & Golub 1973) so that nearly identical subspaces give angles
near 0 without the arccos round-off floor.
"""

from __future__ import annotations

import numpy as np

from probes.arrays import as_matrix


def orthonormal_basis(rows: object, name: str = "basis") -> np.ndarray:
    """Orthonormal columns [d, r] spanning the rows of ``rows`` [p, d] (r = numerical rank)."""
    a = as_matrix(rows, name).T
    u, s, _ = np.linalg.svd(a, full_matrices=False)
    rank = int((s > s.max() * max(a.shape) * np.finfo(float).eps).sum()) if s.size else 0
    if rank == 0:
        raise ValueError(f"{name} spans no subspace (all rows are zero)")
    return u[:, :rank]


def principal_angles(a: object, b: object) -> np.ndarray:
    """Principal angles in degrees, ascending, [min(rank a, rank b)], each in [0, 90]."""
    qa = orthonormal_basis(a, "a")
    qb = orthonormal_basis(b, "b")
    if qa.shape[0] != qb.shape[0]:
        raise ValueError(f"ambient dims differ: {qa.shape[0]} vs {qb.shape[0]}")
    if qa.shape[1] < qb.shape[1]:
        qa, qb = qb, qa
    cos = np.clip(np.linalg.svd(qa.T @ qb, compute_uv=False), 0.0, 1.0)  # descending
    resid = qb - qa @ (qa.T @ qb)
    sin = np.clip(np.linalg.svd(resid, compute_uv=False), 0.0, 1.0)[::-1]  # ascending
    k = qb.shape[1]
    sin = sin[:k] if sin.size >= k else np.concatenate([np.zeros(k - sin.size), sin])
    ang = np.where(cos**2 > 0.5, np.arcsin(sin), np.arccos(cos))
    return np.degrees(ang)
