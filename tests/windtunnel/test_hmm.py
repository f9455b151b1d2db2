import itertools

import numpy as np
import pytest

from windtunnel import make_task
from windtunnel.hmm import (
    EMIT,
    OBS,
    OBS_BASE,
    SEP,
    TRANS,
    discretise_rows,
    filtering_posterior,
    sample_hmm_params,
)


def test_discretised_rows_sum_to_exactly_one_with_floor():
    rng = np.random.default_rng(0)
    T, E = sample_hmm_params(rng, 2000, 5, 5)
    for m in (T, E):
        assert m.dtype == np.int64
        assert (m.sum(-1) == 100).all()
        assert (m >= 5).all()
    # extreme inputs still land on the grid
    extreme = np.array([[1.0, 0, 0, 0, 0], [0.2] * 5, [0.96, 0.01, 0.01, 0.01, 0.01]])
    c = discretise_rows(extreme)
    assert (c.sum(-1) == 100).all() and (c >= 5).all()


def _brute_force(T, E, obs):
    S = T.shape[0]
    t_last = len(obs) - 1
    post = np.zeros(S)
    for path in itertools.product(range(S), repeat=len(obs)):
        p = 1.0 / S * E[path[0], obs[0]]
        for t in range(1, len(obs)):
            p *= T[path[t - 1], path[t]] * E[path[t], obs[t]]
        post[path[t_last]] += p
    return post / post.sum()


def test_filtering_posterior_matches_enumeration_over_hidden_paths():
    rng = np.random.default_rng(1)
    Tc, Ec = sample_hmm_params(rng, 3, 5, 5)
    T, E = Tc / 100, Ec / 100
    obs = rng.integers(0, 5, size=(3, 5))
    post = filtering_posterior(T, E, obs)
    for i in range(3):
        for t in range(5):
            np.testing.assert_allclose(
                post[i, t], _brute_force(T[i], E[i], obs[i, : t + 1]), rtol=1e-12, atol=1e-14
            )


def test_token_layout_and_lengths():
    t = make_task("hmm", K=20)
    b = t.sample(4, seed=0)
    ids = b.input_ids.numpy()
    assert t.header_len == 53 and ids.shape == (4, 93) and t.vocab_size == 110
    assert (ids[:, 0] == TRANS).all() and (ids[:, 26] == EMIT).all() and (ids[:, 52] == SEP).all()
    assert (ids[:, 1:26] <= 95).all() and (ids[:, 27:52] <= 95).all()
    # probability tokens decode to rows summing to exactly 1.00
    T = ids[:, 1:26].reshape(4, 5, 5) + 5
    assert (T.sum(-1) == 100).all()
    assert (ids[:, 53::2] == OBS).all()
    assert ((ids[:, 54::2] >= OBS_BASE) & (ids[:, 54::2] < OBS_BASE + 5)).all()
    assert b.query_pos.tolist() == [53 + 2 * k + 1 for k in range(20)]
    np.testing.assert_allclose(b.posterior.sum(-1).numpy(), 1.0, atol=1e-12)
    assert (b.entropy_bits <= np.log2(5) + 1e-12).all()


def test_posterior_is_computed_from_the_tokens_the_model_sees():
    t = make_task("hmm", K=6)
    b = t.sample(2, seed=5)
    ids = b.input_ids.numpy()
    T = (ids[:, 1:26].reshape(2, 5, 5) + 5) / 100
    E = (ids[:, 27:52].reshape(2, 5, 5) + 5) / 100
    obs = ids[:, 54::2] - OBS_BASE
    np.testing.assert_allclose(filtering_posterior(T, E, obs), b.posterior.numpy(), rtol=1e-12)


def test_length_generalisation_variant():
    t = make_task("hmm", K=20)
    assert t.with_K(50).sample(2, 0).input_ids.shape == (2, 153)
    assert t.max_seq_len == 153
    with pytest.raises(ValueError, match="max_K"):
        t.with_K(60)
