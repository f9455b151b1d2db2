import itertools

import numpy as np
import pytest

from bayesgeom.infotheory import entropy_bits_from_probs
from bayesgeom.windtunnel import TaskConfigError, make_task
from bayesgeom.windtunnel.hmm import (
    EMIT,
    OBS,
    OBS_BASE,
    SEP,
    TRANS,
    discretise_rows,
    filtering_posterior,
    history_free_filter,
    sample_hmm_params,
    window_ladder,
    windowed_filter,
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


def _random_hmms(seed: int, n: int, K: int):
    """``n`` HMMs of the task's prior (probabilities) and ``K`` uniform observations each."""
    rng = np.random.default_rng(seed)
    Tc, Ec = sample_hmm_params(rng, n, 5, 5)
    return Tc / 100, Ec / 100, rng.integers(0, 5, size=(n, K))


def test_filtering_posterior_matches_enumeration_over_hidden_paths():
    T, E, obs = _random_hmms(1, 3, 5)
    post = filtering_posterior(T, E, obs)
    for i in range(3):
        for t in range(5):
            np.testing.assert_allclose(
                post[i, t], _brute_force(T[i], E[i], obs[i, : t + 1]), rtol=1e-12, atol=1e-14
            )


def test_windowed_filter_is_the_filter_from_a_uniform_belief_w_observations_back():
    T, E, obs = _random_hmms(3, 3, 6)
    for w in (1, 2, 3):
        got = windowed_filter(T, E, obs, w)
        for i in range(3):
            for t in range(6):
                lo = max(0, t - w + 1)
                np.testing.assert_allclose(got[i, t], _brute_force(T[i], E[i], obs[i, lo : t + 1]),
                                           rtol=1e-12, atol=1e-14)
    # w = 1 is the emission column alone; w >= K is the exact filter
    np.testing.assert_allclose(windowed_filter(T, E, obs, 1)[:, 2],
                               E[np.arange(3), :, obs[:, 2]] / E[np.arange(3), :, obs[:, 2]]
                               .sum(-1, keepdims=True), rtol=1e-12)
    np.testing.assert_allclose(windowed_filter(T, E, obs, 6), filtering_posterior(T, E, obs),
                               rtol=1e-12)
    with pytest.raises(ValueError, match="window"):
        windowed_filter(T, E, obs, 0)


def test_decode_recovers_the_hmm_and_observations_behind_a_batch():
    t = make_task("hmm", K=6)
    b = t.sample(3, seed=2)
    T, E, obs = t.decode(b.input_ids.numpy())
    np.testing.assert_allclose(filtering_posterior(T, E, obs), b.posterior.numpy(), rtol=1e-12)
    assert obs.shape == (3, 6) and (T.sum(-1).round(12) == 1).all()


def test_window_ladder_falls_with_the_window_and_scores_the_evaluation_sequences():
    t = make_task("hmm", K=8)
    lad = window_ladder(t, [1, 2, 3, 8], n=300, seed=4, batch_size=120)
    maes = [lad[w]["entropy_mae_bits"] for w in (1, 2, 3, 8)]
    assert maes[0] > maes[1] > maes[2] > 0 and maes[3] < 1e-12
    # position t is exact for every window longer than t
    assert lad[2]["per_position"][0] < 1e-12 and lad[2]["per_position"][2] > 0.01
    # the same sequences as evaluate's: its batch i is stream (seed, EVAL, i)
    from bayesgeom.windtunnel.seeds import Purpose, stream
    b = t.sample(120, stream(4, Purpose.EVAL, 0))
    T, E, obs = t.decode(b.input_ids.numpy())
    one = np.abs(entropy_bits_from_probs(windowed_filter(T, E, obs, 1)) - b.entropy_bits.numpy())
    part = window_ladder(t, [1], n=120, seed=4, batch_size=120)[1]["entropy_mae_bits"]
    assert part == pytest.approx(one.mean(), rel=1e-12)
    # ignoring the history (exact prior marginal) lies between one and two observations
    assert maes[0] > lad["history-free"]["entropy_mae_bits"] > maes[1]


def test_history_free_filter_is_the_posterior_given_the_current_observation_alone():
    T, E, obs = _random_hmms(8, 2, 4)
    got = history_free_filter(T, E, obs)
    for i in range(2):
        for t in range(4):
            # enumerate hidden paths; condition on o_t alone (earlier observations summed out)
            joint = np.zeros(5)
            for path in itertools.product(range(5), repeat=t + 1):
                p = 0.2
                for j in range(1, t + 1):
                    p *= T[i, path[j - 1], path[j]]
                joint[path[-1]] += p * E[i, path[-1], obs[i, t]]
            np.testing.assert_allclose(got[i, t], joint / joint.sum(), rtol=1e-12)
    np.testing.assert_allclose(got[:, 0], filtering_posterior(T, E, obs)[:, 0], rtol=1e-12)


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
    # the generic form: the task names the option that sets its evaluation length
    assert t.length_option == "K" and t.at_length(50).config() == t.with_K(50).config()
    assert make_task("long_recall").length_option == "length"
    with pytest.raises(ValueError, match="no length option"):
        make_task("bijection").at_length(50)


def test_target_window_makes_the_windowed_filter_the_target_on_the_same_sequences():
    exact, w2 = make_task("hmm", K=6), make_task("hmm", K=6, target_window=2)
    a, b = exact.sample(4, seed=3), w2.sample(4, seed=3)
    assert (a.input_ids == b.input_ids).all() and (a.targets == b.targets).all()
    T, E, obs = w2.decode(b.input_ids.numpy())
    np.testing.assert_allclose(b.posterior.numpy(), windowed_filter(T, E, obs, 2), rtol=1e-12)
    np.testing.assert_allclose(b.entropy_bits.numpy(),
                               entropy_bits_from_probs(windowed_filter(T, E, obs, 2)))
    assert not np.allclose(a.posterior.numpy(), b.posterior.numpy())
    # a window as long as the sequence is the exact filter; with_K keeps the window
    full = make_task("hmm", K=6, target_window=6).sample(4, seed=3)
    np.testing.assert_allclose(full.posterior.numpy(), a.posterior.numpy(), rtol=1e-12)
    assert w2.with_K(9).config()["target_window"] == 2
    assert "target_window" not in exact.config()  # the paper's task: settings as before
    # the ladder scores against the exact filter whatever the task's training target
    lad_w, lad_e = (window_ladder(t, [2], n=40, seed=1) for t in (w2, exact))
    assert lad_w[2]["entropy_mae_bits"] == lad_e[2]["entropy_mae_bits"] > 0
    with pytest.raises(ValueError, match="target_window"):
        make_task("hmm", K=6, target_window=-1)
    # a window longer than any sequence the task is sized for is refused, not ignored
    with pytest.raises(TaskConfigError, match=r"target_window 1000 exceeds the longest "
                                              r"sequence this task is sized for \(K=20, "
                                              r"max_K=50\)"):
        make_task("hmm", K=20, target_window=1000)
    assert make_task("hmm", K=20, target_window=50).config()["target_window"] == 50
