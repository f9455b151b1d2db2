"""How far a model's attention and output are from an exact Bayes posterior.

Inputs per prompt n: the exact posterior ``bayes`` [N, K] over K hypotheses, the model's next-
token distribution renormalised over the same K hypothesis tokens ``model`` [N, K], and, per
head, the final position's attention row over the prompt's own tokens ``pattern``
[N, H, T] with the token ids ``tokens`` [N, T] (−1 where a row is shorter).

* **attention on hypotheses** ``mass`` [N, H, K]: Σ of α over the positions whose token is
  hypothesis k -- how much each head reads each hypothesis' evidence; ``count`` [N, K] how
  many positions hold it.
* **attention–posterior consistency** (the verifier's headline; :func:`attention_posterior_tv`).
  Paper I's claim is that attention implements the Bayesian update: the head reading the
  evidence puts its weight on the hypotheses in proportion to their posterior. Attention can
  only land on hypotheses the prompt *shows*, S_n = {k : count[n, k] > 0}, so both sides are
  compared on S_n: the head's attention mass renormalised over the shown hypotheses,
  q_h(k) = mass[n, h, k] / Σ_{k'∈S_n} mass[n, h, k'], against the exact posterior restricted
  to them, p(k) = p_Bayes(k) / Σ_{k'∈S_n} p_Bayes(k'), by total variation
  TV_nh = ½ Σ_{k∈S_n} |q_h(k) − p(k)| in [0, 1]. A prompt counts (is *defined*) when it shows
  at least two hypotheses and some of the posterior lies on them (Σ_{S_n} p_Bayes > 0): with
  one shown hypothesis both sides are 1 whatever the head does, and with no posterior on the
  shown ones there is nothing to match (bijection: every value a prompt shows is ruled out).
  A head's **consistency** is 1 − mean_n TV_nh over the defined prompts (NaN where none is);
  1: its attention over the shown hypotheses *is* the posterior on every prompt. The
  renormalisation ignores how much of the row lands on hypothesis tokens at all (reported
  beside it as the head's mean mass). Its **uniform-attention control** reads every position
  equally, q(k) ∝ count[n, k]; on tasks whose posterior follows the counts (SULA's majority
  label) that control is itself close to Bayesian, so a head must beat it to show more than
  counting.
* **output calibration** per prompt (reported beside, under its own name): total variation
  TV = ½ Σ_k |p_model − p_Bayes| in [0, 1] and KL(p_Bayes ‖ p_model) in bits; the
  **output-calibration score** is 1 − mean TV (1: the model outputs the exact posterior on
  every prompt).
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
    >>> count = np.array([[1.0, 1.0]])  # one prompt showing both hypotheses once
    >>> mass = np.array([[[0.6, 0.2], [0.1, 0.1]]])  # head 0 reads 3:1, head 1 evenly
    >>> attention_posterior_tv(mass, count, np.array([[0.75, 0.25]])).round(3).tolist()
    [[0.0, 0.25]]
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
    """Output calibration: 1 − mean TV between the model's output and the exact posterior."""
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


def defined_prompts(count: np.ndarray, bayes: np.ndarray) -> np.ndarray:
    """[N] bool: the prompt shows ≥ 2 hypotheses and some posterior lies on them (module doc);
    ``count`` and ``bayes`` [N, K]."""
    shown = np.asarray(count) > 0
    return (shown.sum(1) >= 2) & ((np.asarray(bayes, dtype=np.float64) * shown).sum(1) > 0)


def attention_posterior_tv(mass: np.ndarray, count: np.ndarray, bayes: np.ndarray,
                           ) -> np.ndarray:
    """[N, H]: TV between each head's attention mass renormalised over the prompt's shown
    hypotheses and the exact posterior renormalised over them (module doc); NaN for an
    undefined prompt (:func:`defined_prompts`) or a head with no mass on the shown ones.
    ``mass`` [N, H, K], ``count`` and ``bayes`` [N, K]."""
    m = np.asarray(mass, dtype=np.float64)
    shown = np.asarray(count) > 0
    b = np.asarray(bayes, dtype=np.float64) * shown
    ok = defined_prompts(count, bayes)
    p = b / np.where(ok, b.sum(1), 1.0)[:, None]
    a = m * shown[:, None, :]
    tot = a.sum(-1, keepdims=True)
    q = a / np.where(tot > 0, tot, 1.0)
    tv = np.asarray(tvd(q, p[:, None, :]), dtype=np.float64)
    return np.where(ok[:, None] & (tot[..., 0] > 0), tv, np.nan)


def uniform_attention_tv(count: np.ndarray, bayes: np.ndarray) -> np.ndarray:
    """[N]: the same TV for attention spread evenly over the prompt's positions (q ∝ count);
    NaN for an undefined prompt."""
    c = np.asarray(count, dtype=np.float64)
    return attention_posterior_tv(c[:, None, :], c, bayes)[:, 0]


def undefined_reason(count: np.ndarray, bayes: np.ndarray) -> str:
    """Why no prompt is defined (module doc), or "" when some is."""
    shown = np.asarray(count) > 0
    if defined_prompts(count, bayes).any():
        return ""
    if not shown.any():
        return "no prompt shows a hypothesis token, so attention cannot land on one"
    if ((np.asarray(bayes) * shown).sum(1) > 0).any():
        return ("no prompt shows two or more hypotheses carrying posterior mass (with one, any "
                "attention matches)")
    return ("every hypothesis a prompt shows has posterior 0, so attention on the shown "
            "hypotheses has no posterior to match (bijection: each shown value is ruled out)")
