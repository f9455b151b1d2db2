"""Output deviation and head tracking against an exact posterior (probes.posterior_consistency)."""

from __future__ import annotations

import numpy as np
import pytest

from bayesgeom.probes.posterior_consistency import (
    consistency_score,
    hypothesis_mass,
    output_deviation,
    permuted_within_groups,
    tracking_correlation,
)


def test_the_exact_posterior_is_fully_consistent_and_uniform_is_not():
    rng = np.random.default_rng(0)
    bayes = rng.dirichlet(np.ones(5) * 0.3, size=40)
    tv, kl = output_deviation(bayes, bayes)
    assert consistency_score(bayes, bayes) == 1.0 and tv.max() == 0 and kl.max() < 1e-12
    uniform = np.full_like(bayes, 0.2)
    assert consistency_score(bayes, uniform) < 0.8
    with pytest.raises(ValueError, match="must both be"):
        output_deviation(bayes, uniform[:, :4])


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
    mass, count = hypothesis_mass(pattern, tokens, hyp)
    assert mass.shape == (60, 3, 4)
    assert (count == (tokens[:, :, None] == hyp[:, None]).sum(1)).all()
    r = tracking_correlation(mass, count, bayes)
    assert r[0] > 0.7 and abs(r[1]) < 0.2 and r[2] < -0.5
    null = [tracking_correlation(mass, count, permuted_within_groups(bayes, np.zeros(60), rng))[0]
            for _ in range(50)]
    assert np.max(np.abs(null)) < r[0]


def test_tracking_is_undefined_where_every_shown_hypothesis_has_the_same_posterior():
    # bijection-like: the posterior is 0 on every hypothesis the prompt shows
    tokens = np.array([[0, 1, 9], [2, 9, 9], [1, 3, 9]])
    hyp = np.broadcast_to(np.arange(4), (3, 4))
    bayes = np.array([[0, 0, 0.5, 0.5], [0.5, 0.5, 0, 0], [0.5, 0, 0.5, 0]])
    pattern = np.random.default_rng(2).random((3, 2, 3))
    mass, count = hypothesis_mass(pattern, tokens, hyp)
    assert np.isnan(tracking_correlation(mass, count, bayes)).all()
