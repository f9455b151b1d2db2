"""Key orthogonality from weights (Paper III) and from hypothesis-token keys (wind tunnel).

Weight-based (Paper III §4.2): for each head's key projection W_K ∈ R^{d_model × d_k}, normalise
its d_k columns to unit ℓ2 norm and average |cos| (and the signed cos) over the ordered pairs
i ≠ j. The columns live in R^{d_model}, so the matching chance level for unrelated directions is
E|cos| ≈ √(2/(π·d_model)) (:func:`gaussian_abs_cos_baseline`; Paper III sometimes plugs in d_k
instead). :func:`random_init_baseline` computes the same statistic on Gaussian matrices of the
same shape (a stand-in for a random initialisation; cosines do not depend on the init scale).

Wind-tunnel variant (Paper I ``qkv_analysis.py``): keys of the V hypothesis tokens,
K = E · W_K (+ b) ∈ R^{V × d_k} per head, rows normalised, mean (and std) of the off-diagonal
entries of K̂K̂ᵀ, absolute and signed; its chance level uses d = d_k.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import asdict, dataclass
from typing import Any

import numpy as np

from .bootstrap import make_rng

PERCENTILES: tuple[float, ...] = (5.0, 25.0, 50.0, 75.0, 95.0)


def gaussian_abs_cos_baseline(d: int) -> float:
    """Large-d chance level √(2/(π·d)) of |cos| between independent isotropic vectors in R^d."""
    if d < 1:
        raise ValueError(f"d must be >= 1, got {d}")
    return math.sqrt(2.0 / (math.pi * d))


def exact_abs_cos_expectation(d: int) -> float:
    """Exact E|cos| = Γ(d/2) / (√π · Γ((d+1)/2)) for independent isotropic vectors, d ≥ 2."""
    if d < 2:
        raise ValueError(f"d must be >= 2, got {d}")
    return math.exp(math.lgamma(d / 2) - math.lgamma((d + 1) / 2)) / math.sqrt(math.pi)


def split_key_weight(weight: object, n_heads: int) -> np.ndarray:
    """Per-head W_K [n_heads, d_model, d_k] from a ``Linear`` weight [n_heads·d_k, d_model]
    whose output rows are grouped by head (head h = rows h·d_k … (h+1)·d_k − 1). For GQA pass
    the number of KV heads. Fused QKV layouts must be split by the caller first."""
    w = np.asarray(weight, dtype=np.float64)
    if w.ndim != 2 or w.shape[0] % n_heads:
        raise ValueError(f"weight {w.shape} does not split into {n_heads} heads")
    d_k = w.shape[0] // n_heads
    return w.reshape(n_heads, d_k, w.shape[1]).transpose(0, 2, 1)


def _offdiag_cos(vectors: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """For [..., m, d] row vectors: mean |cos|, mean cos, std cos over ordered pairs i ≠ j."""
    norms = np.linalg.norm(vectors, axis=-1, keepdims=True)
    if (norms == 0).any():
        raise ValueError("zero vector: cosine undefined")
    u = vectors / norms
    c = u @ np.swapaxes(u, -1, -2)
    m = c.shape[-1]
    if m < 2:
        raise ValueError("need at least 2 vectors per head")
    off = c[..., ~np.eye(m, dtype=bool)]
    return np.abs(off).mean(-1), off.mean(-1), off.std(-1)


def head_key_orthogonality(w_k: object) -> tuple[np.ndarray, np.ndarray]:
    """Per-head (mean |cos|, mean signed cos) over column pairs of W_K [..., d_model, d_k]."""
    w = np.asarray(w_k, dtype=np.float64)
    if w.ndim < 2:
        raise ValueError(f"w_k must be [..., d_model, d_k], got shape {w.shape}")
    abs_mean, signed_mean, _ = _offdiag_cos(np.swapaxes(w, -1, -2))
    return abs_mean, signed_mean


@dataclass(frozen=True, eq=False)  # holds arrays: compare fields explicitly
class LayerOrthogonality:
    """One layer's key orthogonality across its heads (per-head arrays [n_heads])."""

    layer: int
    mean_abs_cos: float
    mean_signed_cos: float
    percentiles: dict[float, float]
    head_abs_cos: np.ndarray
    head_signed_cos: np.ndarray

    def to_record(self) -> dict[str, Any]:
        rec: dict[str, Any] = {
            "layer": self.layer,
            "mean_abs_cos": self.mean_abs_cos,
            "mean_signed_cos": self.mean_signed_cos,
            "n_heads": int(self.head_abs_cos.size),
        }
        rec.update({f"p{p:g}": v for p, v in self.percentiles.items()})
        return rec


def layer_key_orthogonality(
    w_k_per_layer: Sequence[object], percentiles: Sequence[float] = PERCENTILES
) -> list[LayerOrthogonality]:
    """Summaries for each layer's per-head W_K [n_heads, d_model, d_k] (percentiles over heads)."""
    out = []
    for layer, w in enumerate(w_k_per_layer):
        a, s = head_key_orthogonality(w)
        a, s = np.atleast_1d(a), np.atleast_1d(s)
        pct = dict(zip(percentiles, np.percentile(a, percentiles).tolist(), strict=True))
        out.append(LayerOrthogonality(layer, float(a.mean()), float(s.mean()), pct, a, s))
    return out


@dataclass(frozen=True)
class RandomBaseline:
    """The statistic on Gaussian matrices of one head's shape, over ``n_draws`` draws."""

    d_model: int
    d_k: int
    n_draws: int
    mean_abs_cos: float
    std_abs_cos: float
    gaussian_formula: float

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)


def random_init_baseline(
    d_model: int, d_k: int, n_draws: int = 64, seed: int | np.random.Generator | None = 0
) -> RandomBaseline:
    """Mean |cos| between the columns of i.i.d. Gaussian [d_model, d_k] matrices (seeded)."""
    rng = make_rng(seed)
    chunk = max(1, (1 << 24) // (d_model * d_k))
    parts = []
    for start in range(0, n_draws, chunk):
        w = rng.standard_normal((min(chunk, n_draws - start), d_model, d_k))
        parts.append(head_key_orthogonality(w)[0])
    a = np.concatenate(parts)
    return RandomBaseline(
        d_model, d_k, n_draws, float(a.mean()), float(a.std()), gaussian_abs_cos_baseline(d_model)
    )


@dataclass(frozen=True, eq=False)  # holds arrays: compare fields explicitly
class TokenKeyOrthogonality:
    """Wind-tunnel key orthogonality; per-head arrays [n_heads], means over heads."""

    mean_abs_cos: float
    mean_signed_cos: float
    head_abs_cos: np.ndarray
    head_signed_cos: np.ndarray
    head_signed_std: np.ndarray
    gaussian_formula: float


def token_key_orthogonality(
    embeddings: object, w_k: object, bias: object | None = None
) -> TokenKeyOrthogonality:
    """Keys of the V hypothesis tokens. ``embeddings`` [V, d_model]; ``w_k`` per head
    [n_heads, d_model, d_k] (see :func:`split_key_weight`); optional ``bias`` [n_heads, d_k]."""
    e = np.asarray(embeddings, dtype=np.float64)
    w = np.asarray(w_k, dtype=np.float64)
    if w.ndim == 2:
        w = w[None]
    if e.ndim != 2 or w.ndim != 3 or e.shape[1] != w.shape[1]:
        raise ValueError(f"embeddings {e.shape} and w_k {w.shape} do not match")
    keys = np.einsum("vm,hmk->hvk", e, w)
    if bias is not None:
        keys = keys + np.asarray(bias, dtype=np.float64).reshape(w.shape[0], 1, w.shape[2])
    a, s, sd = _offdiag_cos(keys)
    return TokenKeyOrthogonality(
        float(a.mean()), float(s.mean()), a, s, sd, gaussian_abs_cos_baseline(w.shape[2])
    )
