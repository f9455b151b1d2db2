"""The key frame of one head from an SVD: how orthogonal its key vectors are, and how many of
the head's dimensions they use.

A *frame* is m key vectors in R^d, one per hypothesis (a wind tunnel's hypothesis tokens) or per
distinct token, as rows of K [m, d]. The rows are first centred on their mean (``centre=True``,
the default): a component every key shares adds the same amount to all of a query's scores and
cannot route (softmax is shift-invariant), yet it would dominate the geometry (a key bias, the
positions averaged into each token's key). They are then scaled to unit length (K̂), so only
directions count. With σ the singular values of K̂ and n = min(m − 1, d) (min(m, d) uncentred):

* **orthogonality score** = (PR − 1) / (n − 1), PR = (Σσ²)² / Σσ⁴ the participation ratio of
  σ². It is 1 exactly when the n non-zero σ are equal -- uncentred and m ≤ d, orthonormal rows;
  centred, a regular simplex, which is what an orthonormal frame becomes once centred -- and 0
  exactly when K̂ has rank 1 (every key along one line).
* **chance level** (:func:`random_frame_score`): for m independent isotropic directions
  Σσ² = m and E Σσ⁴ = m + m(m−1)·E cos², so PR ≈ m / (1 + (m−1)·E cos²), with E cos² = 1/d
  uncentred (exact) and ≈ 1/(m−1)² + 1/d centred. Near 1 for a few keys in many dimensions, ≈ 1/2
  for m = d; within 0.01 of the mean of Gaussian frames for m ≥ 9 (0.07 low at m = 4, d = 8).
  A trained frame reads against this number and against its random-init twin.
* **effective rank** = exp(H(σ / Σσ)) (Roy & Vetterli 2007), H in nats, between 1 and n;
  **utilisation** = effective rank / d, the fraction of the head's dimensions the frame spans.

Example:
    >>> import numpy as np
    >>> from bayesgeom.probes.key_frame import frame_orthogonality, random_frame_score
    >>> eye = np.eye(4, 8)
    >>> round(frame_orthogonality(eye), 6), round(frame_orthogonality(eye, centre=False), 6)
    (1.0, 1.0)
    >>> rank1 = np.outer(np.arange(1.0, 5.0), np.ones(8))
    >>> round(frame_orthogonality(rank1), 6)
    0.0
    >>> round(random_frame_score(16, 64), 3)
    0.807
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np


def _unit_rows(keys: np.ndarray, centre: bool) -> np.ndarray:
    k = np.asarray(keys, dtype=np.float64)
    if k.ndim != 2 or k.shape[0] < (3 if centre else 2) or k.shape[1] < 2:
        raise ValueError(f"a frame needs a [m, d] matrix with d >= 2 and m >= "
                         f"{3 if centre else 2}, got shape {k.shape}")
    if not np.isfinite(k).all():
        raise ValueError("a frame needs finite key vectors")
    if centre:
        k = k - k.mean(0)
    norms = np.linalg.norm(k, axis=1, keepdims=True)
    if (norms <= 1e-12 * max(1.0, float(np.abs(k).max()))).any():
        raise ValueError("a frame needs non-zero key vectors (after centring: no key equal to "
                         "the frame's mean)")
    return k / norms


def _n(shape: tuple[int, ...], centre: bool) -> int:
    return min(shape[0] - 1 if centre else shape[0], shape[1])


def frame_orthogonality(keys: np.ndarray, centre: bool = True) -> float:
    """The orthogonality score in [0, 1] of the rows of ``keys`` [m, d] (module doc)."""
    s2 = np.linalg.svd(_unit_rows(keys, centre), compute_uv=False) ** 2
    n = _n(np.asarray(keys).shape, centre)
    pr = s2.sum() ** 2 / (s2 ** 2).sum()
    return float(np.clip((pr - 1) / (n - 1), 0.0, 1.0)) if n > 1 else 1.0


def random_frame_score(m: int, d: int, centre: bool = True) -> float:
    """The chance-level orthogonality score of m random directions in R^d (module doc)."""
    if m < (3 if centre else 2) or d < 2:
        raise ValueError(f"need d >= 2 and m >= {3 if centre else 2}, got m={m}, d={d}")
    cos2 = 1 / (m - 1) ** 2 + 1 / d if centre else 1 / d
    pr = m / (1 + (m - 1) * cos2)
    n = _n((m, d), centre)
    return float(np.clip((pr - 1) / (n - 1), 0.0, 1.0)) if n > 1 else 1.0


def effective_rank(keys: np.ndarray, centre: bool = True) -> float:
    """exp(entropy of the normalised singular values) of the unit rows of ``keys`` [m, d]."""
    s = np.linalg.svd(_unit_rows(keys, centre), compute_uv=False)
    p = s[s > 0] / s.sum()
    return float(np.exp(-(p * np.log(p)).sum()))


@dataclass(frozen=True)
class FrameScore:
    """One head's frame: ``m`` keys in ``d`` dimensions, its scores and their chance levels."""

    m: int
    d: int
    orthogonality: float
    chance: float
    effective_rank: float
    utilisation: float


def score_frame(keys: np.ndarray, centre: bool = True) -> FrameScore:
    """Every number of the module doc for one frame ``keys`` [m, d].

    Example:
        >>> import numpy as np
        >>> s = score_frame(np.random.default_rng(0).normal(size=(8, 32)))
        >>> s.m, s.d, round(s.chance, 3), s.utilisation <= 8 / 32
        (8, 32, 0.813, True)
    """
    m, d = np.asarray(keys).shape
    er = effective_rank(keys, centre)
    return FrameScore(m=m, d=d, orthogonality=frame_orthogonality(keys, centre),
                      chance=random_frame_score(m, d, centre), effective_rank=er,
                      utilisation=er / d)
