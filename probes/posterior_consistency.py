"""How far a model's output and attention are from an exact Bayes posterior.

Inputs per prompt n: the exact posterior ``bayes`` [N, K] over K hypotheses, the model's next-
token distribution renormalised over the same K hypothesis tokens ``model`` [N, K], and, per
head, the final position's attention row over the prompt's own tokens ``pattern``
[N, H, T] with the token ids ``tokens`` [N, T] (−1 where a row is shorter).

* **output deviation** per prompt: total variation TV = ½ Σ_k |p_model − p_Bayes| in [0, 1]
  and KL(p_Bayes ‖ p_model) in bits; the **consistency score** is 1 − mean TV (1: the model
  outputs the exact posterior on every prompt).
* **attention on hypotheses** ``mass`` [N, H, K]: Σ of α over the positions whose token is
  hypothesis k -- how much each head reads each hypothesis' evidence; ``count`` [N, K] how
  many positions hold it.
* **posterior tracking** of a head: Pearson correlation, over the (prompt, hypothesis) pairs
  whose hypothesis token occurs in the prompt, between the head's attention *per occurrence*
  (mass / count) and p_Bayes. Per occurrence, so that a head attending uniformly scores ≈ 0 even
  where the favoured hypothesis simply occurs more often (SULA's majority label); restricted
  to shown hypotheses, so that merely reading the prompt's tokens is not a signal (bijection:
  every shown value has posterior 0, and any attention on them would "anti-correlate" with the
  posterior; there the correlation is undefined, NaN). Positive: the head reads the
  occurrences of the hypotheses the posterior favours. Its null: the same correlation with the
  p_Bayes rows permuted among prompts of the same group (e.g. the same prediction index).

Example:
    >>> import numpy as np
    >>> p = np.array([[0.5, 0.5], [1.0, 0.0]])
    >>> output_deviation(p, p)[0].tolist(), consistency_score(p, p)
    ([0.0, 0.0], 1.0)
"""

from __future__ import annotations

import numpy as np

from ..infotheory import kl_bits, pearson, tvd


def _check(bayes: np.ndarray, model: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    b = np.asarray(bayes, dtype=np.float64)
    m = np.asarray(model, dtype=np.float64)
    if b.shape != m.shape or b.ndim != 2:
        raise ValueError(f"posterior {b.shape} and model {m.shape} must both be [N, K]")
    if not (np.isfinite(b).all() and np.isfinite(m).all()):
        raise ValueError("probabilities must be finite")
    return b, m


def output_deviation(bayes: np.ndarray, model: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """(TV [N], KL(p_Bayes ‖ p_model) bits [N]) per prompt."""
    b, m = _check(bayes, model)
    return np.asarray(tvd(m, b)), np.maximum(np.asarray(kl_bits(b, m)), 0.0)


def consistency_score(bayes: np.ndarray, model: np.ndarray) -> float:
    """1 − mean TV between the model's and the exact posterior, in [0, 1]."""
    return float(1.0 - output_deviation(bayes, model)[0].mean())


def hypothesis_mass(pattern: np.ndarray, tokens: np.ndarray, hyp_ids: np.ndarray,
                    ) -> tuple[np.ndarray, np.ndarray]:
    """(mass [N, H, K], count [N, K]): each head's attention mass on the positions holding
    each hypothesis token, and how many positions hold it (``pattern`` [N, H, T], ``tokens``
    [N, T], ``hyp_ids`` [N, K])."""
    a = np.asarray(pattern, dtype=np.float64)
    t = np.asarray(tokens)
    ids = np.asarray(hyp_ids)
    if a.ndim != 3 or t.shape != (a.shape[0], a.shape[2]) or ids.shape[0] != a.shape[0]:
        raise ValueError(f"pattern {a.shape}, tokens {t.shape}, hyp_ids {ids.shape} do not fit")
    onehot = (t[:, :, None] == ids[:, None, :]).astype(np.float64)  # [N, T, K]
    return np.einsum("nht,ntk->nhk", a, onehot), onehot.sum(1)


def tracking_correlation(mass: np.ndarray, count: np.ndarray, bayes: np.ndarray,
                         ) -> np.ndarray:
    """[H]: per head, Pearson correlation of the attention per occurrence (``mass`` [N, H, K]
    / ``count`` [N, K]) with ``bayes`` [N, K] over the shown (prompt, hypothesis) pairs (module
    doc); NaN where either side is constant."""
    m = np.asarray(mass, dtype=np.float64)
    c = np.asarray(count, dtype=np.float64)
    shown = c > 0  # [N, K]
    x = (m / np.where(shown, c, 1.0)[:, None, :]).transpose(1, 0, 2)[:, shown]  # [H, pairs]
    y = np.broadcast_to(np.asarray(bayes, dtype=np.float64)[shown], x.shape)
    if x.shape[1] < 3:
        return np.full(m.shape[1], np.nan)
    return np.asarray(pearson(x, y), dtype=np.float64)


def permuted_within_groups(bayes: np.ndarray, group: np.ndarray, rng: np.random.Generator,
                           ) -> np.ndarray:
    """``bayes`` with its rows permuted among the prompts of each group (the null's draw)."""
    b = np.asarray(bayes)
    g = np.asarray(group)
    idx = np.arange(len(b))
    for v in np.unique(g):
        sel = np.flatnonzero(g == v)
        idx[sel] = rng.permutation(sel)
    return b[idx]


def coverage(bayes: np.ndarray, p: np.ndarray, ratio: float = 0.5) -> np.ndarray:
    """Hypothesis-space coverage per prompt [N]: the posterior mass on the hypotheses the model
    keeps alive, Σ_h p_Bayes(h)·[p(h) ≥ ratio·p_Bayes(h)] (1 for the exact posterior);
    ``bayes`` and ``p`` [N, K], rows summing to 1.

    Example:
        >>> b = np.array([[0.5, 0.5, 0.0], [0.9, 0.1, 0.0]])
        >>> coverage(b, b).tolist(), coverage(b, np.array([[1.0, 0, 0]] * 2)).tolist()
        ([1.0, 1.0], [0.5, 0.9])
    """
    bayes, p = np.asarray(bayes, dtype=np.float64), np.asarray(p, dtype=np.float64)
    kept = (bayes > 0) & (p >= ratio * bayes)
    return (bayes * kept).sum(1)
