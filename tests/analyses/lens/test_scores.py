"""analyses.lens.scores: the position-only baseline, the per-row scores, and the two depths
(decodable beyond the controls; within a threshold from there on), on made-up numbers."""

from __future__ import annotations

import numpy as np

from bayesgeom.analyses.lens.result import LensScore
from bayesgeom.analyses.lens.scores import (
    clears,
    decodable_depth,
    lens_score,
    position_mean,
    row_scores,
    stays_within,
)


def score(condition: str, lens: str, depth: int, kl: float, low: float, high: float,
          final: float = 0.0) -> LensScore:
    return LensScore(condition, lens, depth, f"s{depth}", kl, low, high, final, final, final,
                     0.0, 0.0, 0.0)


def test_position_mean_beats_a_constant_where_positions_differ_and_falls_back_otherwise():
    rng = np.random.default_rng(0)
    pos = np.repeat([0, 1, 2], 40)
    p1 = np.clip(0.2 + 0.3 * pos + rng.normal(0, 0.05, pos.size), 0.01, 0.99)
    p = np.stack([p1, 1 - p1], -1)
    q, how = position_mean(pos, p, np.array([0, 1, 2, 9]))
    assert how == "per-position mean"
    assert np.allclose(q[:3, 0], [p1[pos == k].mean() for k in range(3)], atol=1e-9)
    assert np.allclose(q[3], p.mean(0))  # a position training never saw
    # many positions with one row each: each row's own mean cannot be left out
    q, how = position_mean(np.arange(120), p, np.arange(3))
    assert how == "overall mean" and np.allclose(q, p.mean(0))
    # a value no training row at the position allowed is floored, not -inf
    q, _ = position_mean(np.array([0, 0]), np.array([[1.0, 0.0], [1.0, 0.0]]), np.array([0]))
    assert q[0, 1] > 0 and np.isclose(q.sum(), 1.0)


def test_row_scores_in_bits():
    p = np.array([[0.5, 0.5], [1.0, 0.0]])
    lq = np.log(np.array([[0.5, 0.5], [0.5, 0.5]]))
    r = row_scores(lq, p, final=p)
    assert np.allclose(r["kl_posterior"], [0.0, 1.0]) and np.allclose(r["entropy_mae"], [0, 1])
    s = lens_score("trained", "logit", 3, "resid_post.2", lq, p, p, np.array([0, 1]), 200, 0)
    assert s.kl_posterior_bits == 0.5 and s.depth == 3 and s.fit_iterations == 0


def test_decodable_depth_needs_both_controls_cleared_by_an_honest_interval():
    scores = [score("position_only", "position_mean", d, 1.0, 0.9, 1.1) for d in range(4)]
    scores += [score("random_init", "bayes", d, 0.5, 0.4, 0.6) for d in range(4)]
    scores += [score("trained", "bayes", 0, 0.5, 0.4, 0.6),   # ties the twin
               score("trained", "bayes", 1, 0.1, 0.2, 0.3),   # interval leaves out 0.1
               score("trained", "bayes", 2, 0.2, 0.1, 0.3),   # below both
               score("trained", "bayes", 3, 0.05, 0.01, 0.1)]
    assert not clears(scores[-4], scores[4])
    assert decodable_depth(scores, [0, 1, 2, 3]) == 2
    assert decodable_depth(scores[:8], [0, 1, 2, 3]) is None


def test_stays_within_is_from_there_on():
    scores = [score("trained", "logit", d, 0.0, 0.0, 0.0, final=f)
              for d, f in enumerate([0.5, 0.05, 0.2, 0.08, 0.01])]
    assert stays_within(scores, list(range(5)), "logit", "kl_final", 0.1) == 3
    assert stays_within(scores, list(range(5)), "logit", "kl_final", 1.0) == 0
    assert stays_within(scores, list(range(5)), "logit", "kl_final", 0.001) is None
