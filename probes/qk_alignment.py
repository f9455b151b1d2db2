"""Query–key alignment: cosine between a query and each key it can attend to, per layer.

For one layer, ``q`` [n, H, d] holds the query at the position of interest (e.g. the final
token) and ``k`` [n, H, T, d] the keys of the positions it may attend to (optionally masked by
``key_mask`` [n, T], True = valid). Summaries average over prompts and heads:
* ``mean_max_cos`` — the best-aligned key's cosine;
* ``mean_cos`` — the average cosine over valid keys;
* ``softmax_entropy_bits`` — entropy (bits) of softmax(scale · q·k) over valid keys, i.e. the
  attention the raw logits would give (scale defaults to 1/√d; no causal or positional terms).
Sharpening with depth shows as rising ``mean_max_cos`` and falling ``softmax_entropy_bits``.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import asdict, dataclass
from typing import Any

import numpy as np

from .attention_entropy import attention_entropy_bits


def qk_cosines(q: object, k: object) -> np.ndarray:
    """cos(q, k_j) for each key. q [..., d], k [..., T, d] -> [..., T]."""
    qa = np.asarray(q, dtype=np.float64)
    ka = np.asarray(k, dtype=np.float64)
    qn = np.linalg.norm(qa, axis=-1, keepdims=True)
    kn = np.linalg.norm(ka, axis=-1)
    if (qn == 0).any() or (kn == 0).any():
        raise ValueError("zero query or key vector: cosine undefined")
    return np.einsum("...d,...td->...t", qa / qn, ka) / kn


@dataclass(frozen=True)
class QKAlignment:
    """One layer's alignment summary (means over prompts and heads)."""

    layer: int
    mean_max_cos: float
    mean_cos: float
    softmax_entropy_bits: float

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)


def qk_alignment(
    q: object,
    k: object,
    key_mask: object | None = None,
    scale: float | None = None,
    layer: int = 0,
) -> QKAlignment:
    """Summarise one layer; shapes as in the module docstring."""
    qa = np.asarray(q, dtype=np.float64)
    ka = np.asarray(k, dtype=np.float64)
    if qa.ndim != 3 or ka.ndim != 4 or ka.shape[:2] != qa.shape[:2] or ka.shape[3] != qa.shape[2]:
        raise ValueError(f"q {qa.shape} must be [n, H, d] and k {ka.shape} [n, H, T, d]")
    n, _, t, d = ka.shape
    mask = np.ones((n, t), bool) if key_mask is None else np.asarray(key_mask, dtype=bool)
    if mask.shape != (n, t) or not mask.any(axis=1).all():
        raise ValueError(f"key_mask must be [n, T] = ({n}, {t}) with a valid key per prompt")
    safe_k = np.where(mask[:, None, :, None], ka, 1.0)  # masked keys: any nonzero vector
    cos = qk_cosines(qa, safe_k)  # [n, H, T]
    valid = np.broadcast_to(mask[:, None, :], cos.shape)
    max_cos = np.where(valid, cos, -np.inf).max(axis=-1)
    mean_cos = np.where(valid, cos, 0.0).sum(axis=-1) / valid.sum(axis=-1)
    logits = np.einsum("nhd,nhtd->nht", qa, ka) * (1.0 / np.sqrt(d) if scale is None else scale)
    logits = np.where(valid, logits, -np.inf)
    p = np.exp(logits - logits.max(axis=-1, keepdims=True))
    ent = attention_entropy_bits(p)
    return QKAlignment(layer, float(max_cos.mean()), float(mean_cos.mean()), float(ent.mean()))


def qk_alignment_profile(
    q_per_layer: Sequence[object],
    k_per_layer: Sequence[object],
    key_mask: object | None = None,
    scale: float | None = None,
) -> list[QKAlignment]:
    """:func:`qk_alignment` for each layer (same mask for every layer)."""
    if len(q_per_layer) != len(k_per_layer):
        raise ValueError("q and k need the same number of layers")
    return [
        qk_alignment(q, k, key_mask, scale, layer)
        for layer, (q, k) in enumerate(zip(q_per_layer, k_per_layer, strict=True))
    ]
