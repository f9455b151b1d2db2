"""The numbers of a lens run (:mod:`analyses.lens.run`), from rows to the result: per-row KL
and entropy error, per-prompt means with bootstrap intervals, the position-only baseline and
the two depths the run reports (:data:`analyses.lens.result.DEFINITIONS`).

Example (positions that tell p* apart: their means; ones that do not: the overall mean):
    >>> import numpy as np
    >>> p = np.array([[0.9, 0.1], [0.8, 0.2], [0.2, 0.8], [0.1, 0.9]])
    >>> q, how = position_mean(np.array([3, 3, 5, 5]), p, np.array([3, 5, 7]))
    >>> q.round(2).tolist(), how
    ([[0.85, 0.15], [0.15, 0.85], [0.5, 0.5]], 'per-position mean')
    >>> position_mean(np.array([3, 5, 3, 5]), p, np.array([3]))[1]
    'overall mean'
"""

from __future__ import annotations

import numpy as np

from ...infotheory import entropy_bits_from_probs, kl_bits
from ...probes import mean_interval
from ...probes.bootstrap import excludes
from .result import LensScore

#: floor of a baseline probability (a value no training row at a position allowed)
FLOOR = 1e-12


def _loo_kl(p: np.ndarray, sums: np.ndarray, counts: np.ndarray) -> float:
    """Mean KL(p_i ‖ mean of the other rows of its group) (bits): ``sums`` [N, K] and
    ``counts`` [N] of each row's group, the row itself included; inf where it is alone."""
    with np.errstate(divide="ignore", invalid="ignore"):
        q = (sums - p) / (counts - 1)[:, None]
    if (counts < 2).any():
        return float("inf")
    return float(kl_bits(p, np.maximum(q, FLOOR)).mean())


def position_mean(train_pos: np.ndarray, train_p: np.ndarray, test_pos: np.ndarray,
                  ) -> tuple[np.ndarray, str]:
    """The position-only baseline [N_test, K] and which it is: at each test row's position
    the mean of ``train_p`` [N_train, K] over the training rows at that position
    (``train_pos`` [N_train]; the minimiser of their mean KL(p ‖ q)), or the overall mean
    (where training had none at a position, or wherever the overall mean predicts the
    training rows better, each left out of its own mean: few rows per position overfit),
    floored at :data:`FLOOR` and renormalised."""
    p = np.asarray(train_p, dtype=np.float64)
    pos = np.asarray(train_pos)
    keys, inv, counts = np.unique(pos, return_inverse=True, return_counts=True)
    group_sums = np.zeros((len(keys), p.shape[1]))
    np.add.at(group_sums, inv, p)
    n = len(p)
    overall = p.sum(0) / n
    per = _loo_kl(p, group_sums[inv], counts[inv])
    whole = _loo_kl(p, np.broadcast_to(p.sum(0), p.shape), np.full(n, n))
    if per <= whole:
        means = {int(k): group_sums[i] / counts[i] for i, k in enumerate(keys)}
        q, how = np.stack([means.get(int(t), overall) for t in np.asarray(test_pos)]), \
            "per-position mean"
    else:
        q, how = np.broadcast_to(overall, (len(test_pos), p.shape[1])), "overall mean"
    q = np.maximum(q, FLOOR)
    return q / q.sum(1, keepdims=True), how


def row_scores(log_q: np.ndarray, p_star: np.ndarray, final: np.ndarray,
               ) -> dict[str, np.ndarray]:
    """Per row [N]: ``kl_posterior`` KL(p* ‖ q), ``kl_final`` KL(final ‖ q) and
    ``entropy_mae`` |H(q) − H(p*)| (bits), from a lens' natural log-probabilities ``log_q``
    [N, K], the exact posterior ``p_star`` and the model's ``final`` output [N, K] (a KL of a
    lens to itself, −1e-9 in float32 rounding, is 0)."""
    lq = np.asarray(log_q, dtype=np.float64)
    q = np.exp(lq)
    return {"kl_posterior": np.maximum(kl_bits(p_star, log_q=lq), 0.0),
            "kl_final": np.maximum(kl_bits(final, log_q=lq), 0.0),
            "entropy_mae": np.abs(entropy_bits_from_probs(q) - entropy_bits_from_probs(p_star))}


def per_prompt(values: np.ndarray, prompt_index: np.ndarray) -> np.ndarray:
    """The mean of ``values`` [N] over each prompt's rows (``prompt_index`` [N]), in prompt
    order [n_prompts].

    Example:
        >>> per_prompt(np.array([1.0, 3.0, 5.0]), np.array([0, 0, 1])).tolist()
        [2.0, 5.0]
    """
    idx = np.asarray(prompt_index)
    sums = np.bincount(idx, weights=np.asarray(values, dtype=np.float64))
    return sums / np.bincount(idx)


def lens_score(condition: str, lens: str, depth: int, site: str, log_q: np.ndarray,
               p_star: np.ndarray, final: np.ndarray, prompt_index: np.ndarray, n_boot: int,
               seed: int, fit_kl: float = float("nan"), iterations: int = 0) -> LensScore:
    """A :class:`LensScore`: each of :func:`row_scores` averaged per prompt, then over
    prompts with its BCa interval from ``n_boot`` resamples at ``seed`` (the same resamples
    for every lens and condition: the prompts are the same)."""
    out: dict[str, float] = {}
    for metric, v in row_scores(log_q, p_star, final).items():
        iv = mean_interval(per_prompt(v, prompt_index), n_boot, seed=seed)
        out |= {f"{metric}_bits": iv.estimate, f"{metric}_low": iv.low,
                f"{metric}_high": iv.high}
    return LensScore(condition=condition, lens=lens, depth=depth, site=site, **out,
                     fit_kl_bits=float(fit_kl), fit_iterations=int(iterations))


def usable(s: LensScore, metric: str = "kl_posterior") -> bool:
    """False when ``s``'s interval of ``metric`` leaves out its own estimate: such an interval
    is not evidence (:data:`probes.bootstrap.EXCLUDES_NOTE`)."""
    return not excludes(getattr(s, f"{metric}_bits"), getattr(s, f"{metric}_low"),
                        getattr(s, f"{metric}_high"))


def clears(s: LensScore, *controls: LensScore) -> bool:
    """``s``'s ``kl_posterior`` interval lies wholly below every control's, each interval
    containing its estimate (else no evidence: False)."""
    if not all(usable(x) for x in (s, *controls)):
        return False
    return bool(s.kl_posterior_high < min(c.kl_posterior_low for c in controls))


def _at(scores: list[LensScore], condition: str, lens: str, depth: int) -> LensScore | None:
    return next((s for s in scores if (s.condition, s.lens, s.depth) == (condition, lens,
                                                                          depth)), None)


def decodable_depth(scores: list[LensScore], depths: list[int]) -> int | None:
    """The first of ``depths`` at which the trained Bayes lens' ``kl_posterior`` interval lies
    wholly below both the twin's Bayes lens' and the position-only one's, each containing its
    estimate (:func:`clears`; None: no depth does)."""
    for d in depths:
        t, w, p = (_at(scores, c, lens, d) for c, lens in (
            ("trained", "bayes"), ("random_init", "bayes"), ("position_only", "position_mean")))
        if t is None or w is None or p is None:
            continue
        if clears(t, w, p):
            return d
    return None


def stays_within(scores: list[LensScore], depths: list[int], lens: str, metric: str,
                 bits: float) -> int | None:
    """The first of ``depths`` from which on the trained model's ``lens`` keeps
    ``<metric>_bits`` at most ``bits`` to the last depth (None: not even the last does):
    ``metric`` ``kl_final`` gives where the answer forms, ``kl_posterior`` where the posterior
    is read to within ``bits``."""
    found = None
    for d in reversed(depths):
        s = _at(scores, "trained", lens, d)
        if s is None or not getattr(s, f"{metric}_bits") <= bits:
            break
        found = d
    return found
