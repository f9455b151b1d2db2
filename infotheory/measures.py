"""Entropy, KL divergence, total variation and NaN-safe Pearson correlation, in bits.

Every function takes numpy arrays or torch tensors and returns the same kind, reducing over the
last axis. numpy inputs are computed in float64 (log2); torch inputs stay on their device, in
their own dtype (at least float32: half precision is promoted), with natural logs divided by
ln 2 -- so a model's float32 logits never leave the accelerator. ``0 · log 0 = 0`` throughout.
Each entropy is named for its input: probabilities, log-probabilities or logits.

Example:
    >>> import numpy as np
    >>> float(entropy_bits_from_probs(np.array([0.5, 0.25, 0.25])))
    1.5
    >>> round(float(kl_bits(np.array([0.5, 0.5]), np.array([0.9, 0.1]))), 4)
    0.737
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np

#: ln 2: nats / LN2 = bits
LN2 = math.log(2.0)
#: floor applied to q in KL(p ‖ q) from probabilities, so an impossible event stays finite
KL_FLOOR = 1e-300


def _is_torch(x: Any) -> bool:
    return type(x).__module__.startswith("torch")


def _torch_float(x: Any) -> Any:
    return x if x.dtype in _wide_dtypes() else x.float()


def _wide_dtypes() -> tuple[Any, ...]:
    import torch

    return (torch.float32, torch.float64)


def entropy_bits_from_probs(p: Any) -> Any:
    """H(p) in bits over the last axis of probabilities ``p`` [..., K] -> [...]."""
    if _is_torch(p):
        import torch

        q = _torch_float(p)
        terms = torch.where(q > 0, q * torch.log(q.clamp_min(torch.finfo(q.dtype).tiny)),
                            torch.zeros_like(q))
        return -terms.sum(-1) / LN2
    a = np.asarray(p, dtype=np.float64)
    with np.errstate(divide="ignore", invalid="ignore"):
        plogp = np.where(a > 0, a * np.log2(np.where(a > 0, a, 1.0)), 0.0)
    return -plogp.sum(axis=-1)


def entropy_bits_from_logprobs(logp: Any) -> Any:
    """H in bits from natural log-probabilities ``logp`` [..., K] -> [...]."""
    if _is_torch(logp):
        import torch

        lp = _torch_float(logp)
        p = lp.exp()
        terms = torch.where(p > 0, p * lp, torch.zeros_like(p))
        return -terms.sum(-1) / LN2
    lq = np.asarray(logp, dtype=np.float64)
    q = np.exp(lq)
    with np.errstate(invalid="ignore"):
        plogp = np.where(q > 0, q * lq, 0.0)
    return -plogp.sum(axis=-1) / LN2


def log_softmax(logits: Any) -> Any:
    """Natural log-probabilities of softmax(``logits``) over the last axis."""
    if _is_torch(logits):
        import torch

        return torch.log_softmax(_torch_float(logits), dim=-1)
    z = np.asarray(logits, dtype=np.float64)
    z = z - z.max(axis=-1, keepdims=True)
    return z - np.log(np.exp(z).sum(axis=-1, keepdims=True))


def entropy_bits_from_logits(logits: Any) -> Any:
    """H(softmax(``logits``)) in bits over the last axis [..., V] -> [...].

    Computed a block of rows at a time (at most :data:`CHUNK_ELEMENTS` logits per block), so
    the temporaries (log-probabilities, probabilities, their products) stay a few MiB however
    large the input: [batch, tokens, 262,144] float32 logits need no second copy of their size.
    Each row's result is the same as on the whole array at once.
    """
    if _is_torch(logits):
        import torch

        flat = logits.reshape(-1, logits.shape[-1]) if logits.ndim else logits.reshape(1, 1)
        parts = [entropy_bits_from_logprobs(log_softmax(c))
                 for c in flat.split(_rows_per_chunk(flat.shape[-1]))]
        out = torch.cat(parts) if parts else flat.new_empty(0, dtype=_torch_float(flat).dtype)
        return out.reshape(logits.shape[:-1])
    z = np.asarray(logits)
    flat = z.reshape(-1, z.shape[-1]) if z.ndim else z.reshape(1, 1)
    step = _rows_per_chunk(flat.shape[-1])
    out = np.empty(flat.shape[0], dtype=np.float64)
    for i in range(0, flat.shape[0], step):
        out[i:i + step] = entropy_bits_from_logprobs(log_softmax(flat[i:i + step]))
    return out.reshape(z.shape[:-1])[()]


#: the most logits :func:`entropy_bits_from_logits` reduces at once (4 MiB of float32: four
#: rows of a 262k vocabulary; larger blocks only leave larger freed blocks in the allocator)
CHUNK_ELEMENTS = 2**20


def _rows_per_chunk(width: int) -> int:
    return max(1, CHUNK_ELEMENTS // max(int(width), 1))


def kl_bits(p: Any, q: Any = None, *, log_q: Any = None, floor: float = KL_FLOOR) -> Any:
    """KL(p ‖ q) in bits over the last axis; ``p`` probabilities, ``q`` probabilities (floored
    at ``floor``) or ``log_q`` natural log-probabilities. Terms with p = 0 are 0."""
    if (q is None) == (log_q is None):
        raise ValueError("pass exactly one of q and log_q")
    if _is_torch(p):
        import torch

        a = _torch_float(p)
        lq = torch.log(_torch_float(q).clamp_min(floor)) if log_q is None else log_q
        la = torch.log(torch.where(a > 0, a, torch.ones_like(a)))
        return torch.where(a > 0, a * (la - lq), torch.zeros_like(a)).sum(-1) / LN2
    a = np.asarray(p, dtype=np.float64)
    lq = np.log(np.maximum(np.asarray(q, dtype=np.float64), floor)) if log_q is None \
        else np.asarray(log_q, dtype=np.float64)
    with np.errstate(divide="ignore", invalid="ignore"):
        t = np.where(a > 0, a * (np.log(np.where(a > 0, a, 1.0)) - lq), 0.0)
    return t.sum(axis=-1) / LN2


def kl_bits_from_logprobs(log_p: Any, log_q: Any) -> Any:
    """KL(p ‖ q) in bits from natural log-probabilities of both [..., K] -> [...]."""
    if _is_torch(log_p):
        import torch

        p = log_p.exp()
        return torch.where(p > 0, p * (log_p - log_q), torch.zeros_like(p)).sum(-1) / LN2
    lp = np.asarray(log_p, dtype=np.float64)
    p = np.exp(lp)
    with np.errstate(invalid="ignore"):
        t = np.where(p > 0, p * (lp - np.asarray(log_q, dtype=np.float64)), 0.0)
    return t.sum(axis=-1) / LN2


def tvd(p: Any, q: Any) -> Any:
    """Total variation distance ½ Σ |p − q| over the last axis."""
    if _is_torch(p):
        return 0.5 * (p - q).abs().sum(-1)
    return 0.5 * np.abs(np.asarray(p, dtype=np.float64) - np.asarray(q, dtype=np.float64)).sum(-1)


def pearson(x: object, y: object, min_n: int = 2) -> np.ndarray | float:
    """Pearson r along the last axis (float64); NaN where either input is constant or there are
    fewer than ``min_n`` samples. Works on stacks, e.g. bootstrap replicates [B, n]."""
    a = np.asarray(x, dtype=np.float64)
    b = np.asarray(y, dtype=np.float64)
    if a.shape[-1] < min_n:
        r = np.full(np.broadcast_shapes(a.shape, b.shape)[:-1], np.nan)
        return float(r) if r.ndim == 0 else r
    a = a - a.mean(axis=-1, keepdims=True)
    b = b - b.mean(axis=-1, keepdims=True)
    den = np.sqrt((a * a).sum(axis=-1) * (b * b).sum(axis=-1))
    with np.errstate(invalid="ignore", divide="ignore"):
        r = np.where(den > 0, (a * b).sum(axis=-1) / np.where(den > 0, den, 1.0), np.nan)
    r = np.clip(r, -1.0, 1.0)
    return float(r) if r.ndim == 0 else r
