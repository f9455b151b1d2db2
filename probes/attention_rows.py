"""Numerics on attention rows [..., n_keys]: the Jensen–Shannon divergence (bits) between two
patterns on the same tokens (e.g. a checkpoint's and the final model's), and the mass a pattern
puts on a set of key positions.

Each row is clipped at 0 and renormalised to sum to 1, as :mod:`probes.attention_entropy`
does, so zero-padded key positions carry no mass. With m = (p + q) / 2,
JS(p, q) = ½ KL(p ‖ m) + ½ KL(q ‖ m) in bits, with 0·log 0 = 0: symmetric, 0 exactly when the
rows are equal, at most 1 bit (rows with disjoint supports).

Example:
    >>> import numpy as np
    >>> float(js_divergence_bits(np.array([1.0, 0.0]), np.array([0.0, 1.0])))
    1.0
    >>> float(js_divergence_bits(np.array([0.5, 0.5]), np.array([0.5, 0.5])))
    0.0
"""

from __future__ import annotations

import numpy as np


def _rows(x: object, name: str) -> np.ndarray:
    a = np.clip(np.asarray(x, dtype=np.float64), 0.0, None)
    total = a.sum(axis=-1, keepdims=True)
    if (total <= 0).any() or not np.isfinite(total).all():
        raise ValueError(f"every row of {name} needs positive, finite mass")
    return a / total


def _kl_to_mix(p: np.ndarray, m: np.ndarray) -> np.ndarray:
    with np.errstate(divide="ignore", invalid="ignore"):
        terms = np.where(p > 0, p * np.log2(np.where(p > 0, p, 1.0) / np.where(m > 0, m, 1.0)),
                         0.0)
    return terms.sum(axis=-1)


def js_divergence_bits(p: object, q: object) -> np.ndarray:
    """JS(p, q) in bits over the last axis of two attention arrays of one shape
    [..., n_keys] -> [...] (module doc); values in [0, 1]."""
    a, b = _rows(p, "p"), _rows(q, "q")
    if a.shape != b.shape:
        raise ValueError(f"p {a.shape} and q {b.shape} differ in shape")
    m = 0.5 * (a + b)
    return np.clip(0.5 * _kl_to_mix(a, m) + 0.5 * _kl_to_mix(b, m), 0.0, 1.0)


def attention_mass(patterns: object, mask: object) -> np.ndarray:
    """Per layer, the attention mass on the key positions of ``mask`` [rows, T] (bool), mean
    over heads and over the rows whose mask is not empty; ``patterns`` [rows, L, H, T].
    Returns [L] (NaN where no row has a masked position)."""
    p = np.asarray(patterns, dtype=np.float64)
    m = np.asarray(mask, dtype=bool)
    if p.ndim != 4 or m.shape != (p.shape[0], p.shape[3]):
        raise ValueError(f"patterns {p.shape} must be [rows, L, H, T] and mask {m.shape} "
                         "[rows, T]")
    rows = m.any(-1)
    if not rows.any():
        return np.full(p.shape[1], np.nan)
    return (p[rows] * m[rows][:, None, None, :]).sum(-1).mean(axis=(0, 2))


def content_masks(ids: object, qpos: object, posterior: object, hyp_offset: int,
                  ) -> tuple[np.ndarray, np.ndarray]:
    """Which earlier positions of each prediction row carry still-feasible or eliminated
    content, for tasks whose hypotheses are tokens ``hyp_offset + h`` (bijection's values).
    ``ids`` [n, T]; ``qpos`` [Q] prediction positions; ``posterior`` [n, Q, H] at them.
    Position j < p is *feasible* for the row at p when its token is a hypothesis h with
    posterior(h) > 0, or the same (non-hypothesis) token as at p (the key whose value is the
    answer); *eliminated* when it is a hypothesis with posterior 0. Returns two bool masks
    [n·Q, T] (rows sequence-major, then position)."""
    x = np.asarray(ids)
    q = np.asarray(qpos)
    post = np.asarray(posterior)
    n, T = x.shape
    is_hyp = (x >= hyp_offset) & (x < hyp_offset + post.shape[-1])
    h = np.where(is_hyp, x - hyp_offset, 0)
    p_h = np.take_along_axis(post, np.broadcast_to(h[:, None, :], (n, q.size, T)), axis=2)
    before = (np.arange(T)[None, :] < q[:, None])[None]  # [1, Q, T]
    same = ~is_hyp[:, None, :] & (x[:, None, :] == x[:, q][:, :, None])
    feasible = before & ((is_hyp[:, None, :] & (p_h > 0)) | same)
    eliminated = before & is_hyp[:, None, :] & (p_h == 0)
    return feasible.reshape(n * q.size, T), eliminated.reshape(n * q.size, T)
