"""How one attention layer's scores, patterns and values moved between two moments of training,
and how well the moves follow a predicted direction (the numerics of the Paper II monitor,
:mod:`analyses.dynamics.monitor.run`).

Shapes follow :mod:`probes.routing_law`: scores, patterns and their gradients [N, H, T, Tk];
queries [N, H, T, dh]; keys and values [N, Hkv, Tk, dh]; ``allowed`` [N, 1 or H, T, Tk] bool
marks the entries the attention mask lets through (a query row with no allowed entry is a pad
row). Every per-head result is indexed by axis 1 (query heads, or kv heads for values). Arrays
are float64 numpy; a quantity that is 0/0 (a zero vector's direction) is NaN.

* scores        s_ij = c · q_iᵀ k_j  (c the kernel's scaling; the additive mask left out)
* centred rows  s_ij − mean_{j' allowed} s_ij' on allowed entries, 0 elsewhere: softmax ignores
                a constant added to a row, so this is the part of the scores that matters
* head cosine   ⟨a, b⟩ / (‖a‖ ‖b‖) over the masked entries of one head (all rows and batch
                items at once)
* TV distance   ½ Σ_j |α'_ij − α_ij| per real query row, averaged over the head's real rows
* relative change ‖x' − x‖_F / ‖x‖_F over the masked entries of one head
* path-length fraction of a series of per-interval changes c_1..c_n: Σ_{k≤t} c_k / Σ_k c_k;
  the settle step at level ℓ is the end of the first interval at which it reaches ℓ

Example:
    >>> import numpy as np
    >>> s = np.array([[[[1.0, 3.0, 9.0]]]]); allowed = np.array([[[[True, True, False]]]])
    >>> centre_rows(s, allowed)  # the masked entry is dropped, the row centred on the rest
    array([[[[-1.,  1.,  0.]]]])
    >>> settle_step([50, 100, 150, 200], [6.0, 2.0, 1.0, 1.0], level=0.9)  # 0.6 0.8 0.9 1
    150
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from .pca import PCAResult, fit_pca


def head_scores(q: np.ndarray, k: np.ndarray, scaling: float,
                kv_of_query: Sequence[int]) -> np.ndarray:
    """s_ij = c · q_iᵀ k_j [N, H, T, Tk] from q [N, H, T, dh] and k [N, Hkv, Tk, dh]."""
    return scaling * (q @ np.swapaxes(k[:, list(kv_of_query)], -1, -2))


def centre_rows(x: np.ndarray, allowed: np.ndarray) -> np.ndarray:
    """Each row of ``x`` [N, H, T, Tk] minus its mean over the allowed entries, and 0 on the
    entries that are not allowed (a row with none is all 0)."""
    m = np.broadcast_to(allowed, x.shape)
    n = m.sum(-1, keepdims=True)
    mean = np.where(m, x, 0.0).sum(-1, keepdims=True) / np.maximum(n, 1)
    return np.where(m, x - mean, 0.0)


def _per_head(x: np.ndarray) -> np.ndarray:
    """Σ over every axis but 1: [N, H, ...] -> [H]."""
    return x.sum(axis=tuple(a for a in range(x.ndim) if a != 1))


def head_cosine(a: np.ndarray, b: np.ndarray, mask: np.ndarray) -> np.ndarray:
    """Cosine between ``a`` and ``b`` (one shape [N, H, ...]) over the entries where ``mask``
    (broadcastable) is true, per head: [H]; NaN for a head where either is zero there."""
    if a.shape != b.shape:
        raise ValueError(f"shapes differ: {a.shape} and {b.shape}")
    m = np.broadcast_to(mask, a.shape)
    a, b = np.where(m, a, 0.0), np.where(m, b, 0.0)
    den = np.sqrt(_per_head(a * a) * _per_head(b * b))
    with np.errstate(divide="ignore", invalid="ignore"):
        return np.where(den > 0, _per_head(a * b) / den, np.nan)


def row_tv_distance(p0: np.ndarray, p1: np.ndarray, allowed: np.ndarray) -> np.ndarray:
    """Mean over each head's real query rows of ½ Σ_j |p1_ij − p0_ij| [H] (rows of two
    attention patterns [N, H, T, Tk]; a real row has an allowed entry); in [0, 1]."""
    if p0.shape != p1.shape:
        raise ValueError(f"shapes differ: {p0.shape} and {p1.shape}")
    m = np.broadcast_to(allowed, p0.shape)
    real = np.asarray(m.any(-1))  # [N, H, T]
    tv = 0.5 * np.where(m, np.abs(p1 - p0), 0.0).sum(-1)
    with np.errstate(divide="ignore", invalid="ignore"):
        return _per_head(np.where(real, tv, 0.0)) / _per_head(real)


def relative_change(x0: np.ndarray, x1: np.ndarray, mask: np.ndarray) -> np.ndarray:
    """‖x1 − x0‖_F / ‖x0‖_F over the masked entries, per head [H] (NaN where x0 is 0)."""
    if x0.shape != x1.shape:
        raise ValueError(f"shapes differ: {x0.shape} and {x1.shape}")
    m = np.broadcast_to(mask, x0.shape)
    num = _per_head(np.where(m, (x1 - x0) ** 2, 0.0))
    den = _per_head(np.where(m, x0 ** 2, 0.0))
    with np.errstate(divide="ignore", invalid="ignore"):
        return np.where(den > 0, np.sqrt(num / den), np.nan)


def real_keys(allowed: np.ndarray) -> np.ndarray:
    """[N, 1, Tk, 1] bool: the key positions some query may read (for masking values and keys
    [N, Hkv, Tk, dh])."""
    return np.asarray(allowed.any(axis=(1, 2)))[:, None, :, None]


def head_value_pca(v: np.ndarray, keys: np.ndarray) -> list[PCAResult]:
    """Centred PCA of each kv head's value vectors {v_j} [n_keys, dh] over every real key
    position of the batch (``keys`` as :func:`real_keys`); one result per kv head."""
    rows = np.broadcast_to(keys[..., 0], v.shape[:-1])  # [N, Hkv, Tk]
    return [fit_pca(v[:, g][rows[:, g]]) for g in range(v.shape[1])]


def path_length_fraction(changes: Sequence[float] | np.ndarray) -> np.ndarray:
    """Σ_{k≤t} c_k / Σ_k c_k [n] of per-interval changes c ≥ 0 (NaN intervals count 0); all
    NaN when nothing changed."""
    c = np.nan_to_num(np.asarray(changes, dtype=np.float64), nan=0.0)
    if (c < 0).any():
        raise ValueError("changes must be >= 0")
    total = c.sum()
    return np.cumsum(c) / total if total > 0 else np.full(c.shape, np.nan)


def settle_step(steps: Sequence[int] | np.ndarray, changes: Sequence[float] | np.ndarray,
                level: float = 0.9) -> int | None:
    """The first of ``steps`` (each interval's end, increasing) at which the path-length
    fraction of ``changes`` reaches ``level`` in (0, 1]; None when nothing changed."""
    s = np.asarray(steps)
    if s.shape != np.shape(changes) or s.ndim != 1:
        raise ValueError(f"steps {s.shape} and changes {np.shape(changes)} must be "
                         "one-dimensional and of one length")
    if not 0 < level <= 1:
        raise ValueError(f"level must be in (0, 1], got {level}")
    if (np.diff(s) <= 0).any():
        raise ValueError("steps must be increasing")
    frac = path_length_fraction(changes)
    hit = np.flatnonzero(frac >= level - 1e-12)
    return int(s[hit[0]]) if hit.size else None
