"""Paper II's gradient identities of one attention layer, predicted from its forward tensors
(arXiv 2512.22473; spec §2.1–2.2), and the error of a prediction against autograd.

Notation (per head, batch row ``n``): α_ij the attention probabilities, u_i = ∂L/∂o_i the
upstream gradient at the head output, v_j, q_i, k_j the values, queries and keys as the kernel
sees them, s_ij = c · q_iᵀk_j (+ mask) the scores with scaling c (1/√d_k by default).

* compatibility  b_ij = u_iᵀ v_j                         (= ∂L/∂α_ij)
* advantage      b_ij − E_{α_i}[b] = b_ij − Σ_k α_ik b_ik
* routing law    ∂L/∂s_ij = α_ij (b_ij − E_{α_i}[b])      (rows sum to zero)
* value update   ∂L/∂v_j = Σ_i α_ij u_i                    (Δv_j = −η Σ_i α_ij u_i)
* queries, keys  ∂L/∂q_i = c Σ_j ∂L/∂s_ij k_j,  ∂L/∂k_j = c Σ_i ∂L/∂s_ij q_i
* feedback       after v ← v − η ∂L/∂v at fixed u: Δb_ij = −η Σ_i' α_i'j u_iᵀu_i'
  (one head; the self term −η α_jj ‖u_j‖² ≤ 0 raises the advantage of a self-attending query)

Shapes: α, b, score gradients [N, H, T, Tk]; u, q [N, H, T, dh]; v, k [N, Hkv, Tk, dh].
Under grouped-query attention query head h reads kv head ``kv_of_query[h]``; gradients of
shared values and keys sum over the query heads of a group. Arrays are float64 numpy.

Example:
    >>> import numpy as np
    >>> from bayesgeom.probes.routing_law import score_gradient
    >>> a = np.array([[[[0.25, 0.75]]]]); b = np.array([[[[1.0, 3.0]]]])
    >>> score_gradient(a, b)  # α (b − E_α b): E_α b = 2.5
    array([[[[-0.375,  0.375]]]])
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np


def _expand(x: np.ndarray, kv_of_query: Sequence[int]) -> np.ndarray:
    """[N, Hkv, T, d] -> [N, H, T, d]: each query head's kv head."""
    return x[:, list(kv_of_query)]


def _group_sum(x: np.ndarray, kv_of_query: Sequence[int], n_kv: int) -> np.ndarray:
    """[N, H, T, d] -> [N, Hkv, T, d]: sum over the query heads of each kv group."""
    out = np.zeros((x.shape[0], n_kv, *x.shape[2:]), dtype=x.dtype)
    for h, g in enumerate(kv_of_query):
        out[:, g] += x[:, h]
    return out


def compatibilities(u: np.ndarray, v: np.ndarray, kv_of_query: Sequence[int]) -> np.ndarray:
    """b_ij = u_iᵀ v_j [N, H, T, Tk] from u [N, H, T, dh] and v [N, Hkv, Tk, dh]."""
    return u @ np.swapaxes(_expand(v, kv_of_query), -1, -2)


def advantages(alpha: np.ndarray, b: np.ndarray) -> np.ndarray:
    """The advantages b_ij − E_{α_i}[b]: [N, H, T, Tk]."""
    return b - (alpha * b).sum(-1, keepdims=True)


def score_gradient(alpha: np.ndarray, b: np.ndarray) -> np.ndarray:
    """The routing law ∂L/∂s_ij = α_ij (b_ij − E_{α_i}[b]) [N, H, T, Tk]."""
    return alpha * advantages(alpha, b)


def value_gradient(alpha: np.ndarray, u: np.ndarray, kv_of_query: Sequence[int],
                   n_kv: int) -> np.ndarray:
    """∂L/∂v_j = Σ_i α_ij u_i [N, Hkv, Tk, dh], summed over each kv group's query heads."""
    return _group_sum(np.swapaxes(alpha, -1, -2) @ u, kv_of_query, n_kv)


def query_gradient(score_grad: np.ndarray, k: np.ndarray, scaling: float,
                   kv_of_query: Sequence[int]) -> np.ndarray:
    """∂L/∂q_i = c Σ_j ∂L/∂s_ij k_j [N, H, T, dh]."""
    return scaling * score_grad @ _expand(k, kv_of_query)


def key_gradient(score_grad: np.ndarray, q: np.ndarray, scaling: float,
                 kv_of_query: Sequence[int], n_kv: int) -> np.ndarray:
    """∂L/∂k_j = c Σ_i ∂L/∂s_ij q_i [N, Hkv, Tk, dh], summed over each kv group."""
    return _group_sum(scaling * np.swapaxes(score_grad, -1, -2) @ q, kv_of_query, n_kv)


def feedback_change(alpha: np.ndarray, u: np.ndarray, eta: float, kv_of_query: Sequence[int],
                    n_kv: int) -> np.ndarray:
    """Δb_ij [N, H, T, Tk]: the change of the compatibilities after the value step
    v ← v − η ∂L/∂v at fixed u. For one head Δb_ij = −η Σ_i' α_i'j u_iᵀu_i'; under GQA the
    step is the kv group's summed gradient."""
    return compatibilities(u, -eta * value_gradient(alpha, u, kv_of_query, n_kv), kv_of_query)


def relative_error(pred: np.ndarray, ref: np.ndarray, axis: int = 1) -> np.ndarray:
    """max |pred − ref| / max |ref| for each index of ``axis`` (e.g. per head), over all the
    other axes: an error scaled by the quantity's own size (0 where both are 0, inf where only
    ``ref`` is)."""
    if pred.shape != ref.shape:
        raise ValueError(f"shapes differ: prediction {pred.shape}, reference {ref.shape}")
    other = tuple(a for a in range(pred.ndim) if a != axis % pred.ndim)
    num = np.abs(pred - ref).max(axis=other)
    den = np.abs(ref).max(axis=other)
    with np.errstate(divide="ignore", invalid="ignore"):
        return np.where(num == 0, 0.0, num / den)


def first_order_ratio(loss_before: float, loss_after: float, eta: float,
                      grad_sq_norm: float) -> float:
    """(L(v − η g) − L(v)) / (−η ‖g‖²): the measured over the first-order loss change of a
    gradient step; tends to 1 as η → 0."""
    return (loss_after - loss_before) / (-eta * grad_sq_norm)
