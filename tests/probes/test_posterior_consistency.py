"""Output deviation and head tracking against an exact posterior (probes.posterior_consistency)."""

from __future__ import annotations

import numpy as np
import pytest

from bayesgeom.probes import posterior_consistency as pc


def test_the_exact_posterior_is_fully_consistent_and_uniform_is_not():
    rng = np.random.default_rng(0)
    bayes = rng.dirichlet(np.ones(5) * 0.3, size=40)
    tv, kl = pc.output_deviation(bayes, bayes)
    assert pc.consistency_score(bayes, bayes) == 1.0 and tv.max() == 0 and kl.max() < 1e-12
    uniform = np.full_like(bayes, 0.2)
    assert pc.consistency_score(bayes, uniform) < 0.8
    with pytest.raises(ValueError, match="must both be"):
        pc.output_deviation(bayes, uniform[:, :4])


def _prompts(n=60, k=4, t=12, seed=1):
    """Random prompts whose tokens are hypotheses 0..k-1 or filler 9, and posteriors."""
    rng = np.random.default_rng(seed)
    tokens = rng.choice([0, 1, 2, 3, 9, 9], size=(n, t))
    hyp = np.broadcast_to(np.arange(k), (n, k))
    bayes = rng.dirichlet(np.ones(k), size=n)
    return rng, tokens, hyp, bayes


def test_a_head_reading_the_favoured_hypotheses_tracks_the_posterior():
    rng, tokens, hyp, bayes = _prompts()
    # head 0: attention per occurrence proportional to the posterior of the token's hypothesis;
    # head 1: random, blind to the posterior; head 2: reads the disfavoured ones
    weight = np.where(tokens < 4, np.take_along_axis(bayes, np.minimum(tokens, 3), 1), 0.01)
    pattern = np.stack([weight, rng.random(weight.shape), np.where(tokens < 4, 1 - weight, 0.01)],
                       axis=1)
    pattern /= pattern.sum(-1, keepdims=True)
    mass, count = pc.hypothesis_mass(pattern, tokens, hyp)
    assert mass.shape == (60, 3, 4)
    assert (count == (tokens[:, :, None] == hyp[:, None]).sum(1)).all()
    r = pc.tracking_correlation(mass, count, bayes)
    assert r[0] > 0.7 and abs(r[1]) < 0.2 and r[2] < -0.5
    shuffled = (pc.permuted_within_groups(bayes, np.zeros(60), rng) for _ in range(50))
    null = [pc.tracking_correlation(mass, count, b)[0] for b in shuffled]
    assert np.max(np.abs(null)) < r[0]


def test_tracking_is_undefined_where_every_shown_hypothesis_has_the_same_posterior():
    # bijection-like: the posterior is 0 on every hypothesis the prompt shows
    tokens = np.array([[0, 1, 9], [2, 9, 9], [1, 3, 9]])
    hyp = np.broadcast_to(np.arange(4), (3, 4))
    bayes = np.array([[0, 0, 0.5, 0.5], [0.5, 0.5, 0, 0], [0.5, 0, 0.5, 0]])
    pattern = np.random.default_rng(2).random((3, 2, 3))
    mass, count = pc.hypothesis_mass(pattern, tokens, hyp)
    assert np.isnan(pc.tracking_correlation(mass, count, bayes)).all()


def _retrieval(n=50, k=6, seed=3):
    """Prompts showing each of k hypotheses once among filler (token 9), with a point posterior
    on one of them (a retrieval) and, per head, attention patterns [n, 3, T]: head 0 puts its
    weight exactly as the posterior (on the answer's position), head 1 is uniform over the
    prompt, head 2 reads the first shown hypothesis."""
    rng = np.random.default_rng(seed)
    t = 2 * k
    tokens = np.full((n, t), 9)
    pos = np.stack([rng.choice(t, size=k, replace=False) for _ in range(n)])
    for i in range(n):
        tokens[i, pos[i]] = np.arange(k)
    answer = rng.integers(0, k, size=n)
    bayes = np.eye(k)[answer]
    exact = np.zeros((n, t))
    exact[np.arange(n), pos[np.arange(n), answer]] = 1.0
    first = np.zeros((n, t))
    first[np.arange(n), pos[:, 0]] = 1.0
    pattern = np.stack([exact, np.full((n, t), 1.0 / t), first], axis=1)
    return tokens, np.broadcast_to(np.arange(k), (n, k)), bayes, pattern


def test_attention_that_is_the_posterior_scores_one_and_uniform_attention_low():
    tokens, hyp, bayes, pattern = _retrieval()
    mass, count = pc.hypothesis_mass(pattern, tokens, hyp)
    tv = pc.attention_posterior_tv(mass, count, bayes)  # [N, H]
    assert pc.defined_prompts(count, bayes).all() and pc.undefined_reason(count, bayes) == ""
    score = 1 - tv.mean(0)
    assert score[0] == pytest.approx(1.0, abs=1e-12)
    assert score[1] == pytest.approx(1 / 6)  # uniform over 6 shown: TV = 1 − 1/6
    assert score[1] == pytest.approx(1 - pc.uniform_attention_tv(count, bayes).mean())
    assert score[1] < score[2] < 0.5  # reading a fixed hypothesis is right 1 time in 6


def test_attention_is_compared_on_the_shown_hypotheses_only():
    # two shown hypotheses (0, 1) with posterior 0.6 / 0.2 (0.2 on the unshown 2): a head
    # reading them 3:1 matches the posterior renormalised over the shown ones exactly
    tokens = np.array([[0, 9, 1]])
    bayes = np.array([[0.6, 0.2, 0.2]])
    hyp = np.arange(3)[None]
    pattern = np.array([[[0.6, 0.2, 0.2], [0.1, 0.1, 0.8]]])
    mass, count = pc.hypothesis_mass(pattern, tokens, hyp)
    tv = pc.attention_posterior_tv(mass, count, bayes)
    assert tv[0, 0] == pytest.approx(0.0, abs=1e-12) and tv[0, 1] == pytest.approx(0.75 - 1 / 9)


def test_attention_consistency_is_undefined_with_a_reason_where_nothing_can_match():
    # bijection-like: every shown hypothesis has posterior 0
    tokens = np.array([[0, 1, 9], [2, 9, 9], [1, 3, 9]])
    hyp = np.broadcast_to(np.arange(4), (3, 4))
    bayes = np.array([[0, 0, 0.5, 0.5], [0.5, 0.5, 0, 0], [0.5, 0, 0.5, 0]])
    mass, count = pc.hypothesis_mass(np.random.default_rng(2).random((3, 2, 3)), tokens, hyp)
    assert np.isnan(pc.attention_posterior_tv(mass, count, bayes)).all()
    assert "posterior 0" in pc.undefined_reason(count, bayes)
    none_shown = np.zeros_like(count)
    assert "no prompt shows a hypothesis" in pc.undefined_reason(none_shown, bayes)
    one = np.array([[1, 0, 0, 0]] * 3)  # one shown hypothesis: any attention would match
    assert "two or more" in pc.undefined_reason(one, np.full((3, 4), 0.25))
