"""Attention entropy (bits) per head and layer, and the focusing fraction from first to last layer.

Each attention row is clipped at 0 and renormalised to sum to 1 (as Paper III's code does), then
H = −Σ_j α_j log₂ α_j with 0·log 0 = 0; zero-padded key positions therefore contribute nothing,
so prompts of different lengths can share one zero-padded array. No Jensen bias: entropy is
computed per head (and prompt) first and averaged afterwards, never from averaged attention.

Focusing = (H_first − H_last) / H_first, a fraction (0.82 = Paper III's "↓82 %").
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from ..infotheory import entropy_bits_from_probs
from .bootstrap import Interval, bca_interval, resample_indices


def attention_entropy_bits(attn: object) -> np.ndarray:
    """Entropy in bits of each attention row (last axis). [..., n_keys] -> [...]."""
    p = np.clip(np.asarray(attn, dtype=np.float64), 0.0, None)
    total = p.sum(axis=-1, keepdims=True)
    if (total <= 0).any() or not np.isfinite(total).all():
        raise ValueError("every attention row needs positive, finite mass")
    return entropy_bits_from_probs(p / total)


def head_entropies(attn_per_layer: Sequence[object]) -> np.ndarray:
    """Stack per-layer final-token attention [n_prompts, n_heads, n_keys] into entropies
    [n_prompts, n_layers, n_heads] (bits)."""
    return np.stack([attention_entropy_bits(a) for a in attn_per_layer], axis=1)


def focusing_fraction(layer_entropy: object) -> float:
    """(H_first − H_last) / H_first over a per-layer entropy sequence; NaN if H_first is 0."""
    h = np.asarray(layer_entropy, dtype=np.float64).ravel()
    if h.size < 2:
        raise ValueError("need at least two layers")
    return float("nan") if h[0] == 0 else float((h[0] - h[-1]) / h[0])


@dataclass(frozen=True, eq=False)  # holds arrays: compare fields explicitly
class AttentionEntropyProfile:
    """Per-layer attention entropy (bits). ``layer_entropy``/``layer_low``/``layer_high`` [L]
    (mean over prompts of the head-mean entropy, BCa CI over prompts; ``layer_intervals`` the
    same, each an :class:`Interval` with its method and flag); ``head_entropy`` [L, H] (mean over
    prompts); ``focusing`` a fraction with its BCa CI from the same resamples."""

    n_prompts: int
    level: float
    layer_entropy: np.ndarray
    layer_low: np.ndarray
    layer_high: np.ndarray
    head_entropy: np.ndarray
    focusing: Interval
    layer_intervals: tuple[Interval, ...] = ()

    def to_records(self) -> list[dict[str, Any]]:
        return [
            {
                "layer": i,
                "entropy_bits": float(self.layer_entropy[i]),
                "low": float(self.layer_low[i]),
                "high": float(self.layer_high[i]),
            }
            for i in range(self.layer_entropy.size)
        ]


def attention_entropy_profile(
    head_entropy: object,
    n_resamples: int = 1000,
    level: float = 0.95,
    seed: int | np.random.Generator | None = 0,
) -> AttentionEntropyProfile:
    """Summarise entropies [n_prompts, n_layers, n_heads] (bits) with a bootstrap over prompts
    (BCa intervals; the jackknife of a mean over prompts is (Σ − rowᵢ)/(n − 1))."""
    e = np.asarray(head_entropy, dtype=np.float64)
    if e.ndim != 3 or e.shape[1] < 2:
        raise ValueError(f"need [n_prompts, n_layers >= 2, n_heads], got {e.shape}")
    per_prompt = e.mean(axis=2)  # [n, L]: head average first
    layer = per_prompt.mean(axis=0)
    n = e.shape[0]
    reps = per_prompt[resample_indices(n, n_resamples, seed)].mean(axis=1)  # [B, L]
    jack = (per_prompt.sum(axis=0) - per_prompt) / (n - 1) if n > 1 else None  # [n, L]
    layers = tuple(bca_interval(float(layer[i]), reps[:, i],
                                None if jack is None else jack[:, i], level)
                   for i in range(layer.size))
    with np.errstate(invalid="ignore", divide="ignore"):
        foc_reps = (reps[:, 0] - reps[:, -1]) / reps[:, 0]
        foc_jack = None if jack is None else (jack[:, 0] - jack[:, -1]) / jack[:, 0]
    return AttentionEntropyProfile(
        n_prompts=n,
        level=level,
        layer_entropy=layer,
        layer_low=np.array([iv.low for iv in layers]),
        layer_high=np.array([iv.high for iv in layers]),
        head_entropy=e.mean(axis=0),
        focusing=bca_interval(focusing_fraction(layer), foc_reps, foc_jack, level),
        layer_intervals=layers,
    )
