"""The wider wind-tunnel space: observation noise on bijection, priors, and the sparse posterior
form for large hypothesis spaces (bijection here; long_recall in test_long_recall.py)."""

import itertools
import math

import numpy as np
import pytest
import torch

from bayesgeom.windtunnel import TaskConfigError, make_task
from bayesgeom.windtunnel.bijection import noisy_posterior
from bayesgeom.windtunnel.evaluate import bayes_accuracy
from bayesgeom.windtunnel.metrics import calibration_stats
from bayesgeom.windtunnel.priors import prior_weights, sample_from
from bayesgeom.windtunnel.seeds import Purpose, stream
from bayesgeom.windtunnel.sparse_posterior import SparsePosterior


def _brute_noisy_bijection(keys, shown, V, noise):
    """p(π(x_t) = h | shown[:t]) by enumerating every permutation of [V]."""
    L = len(keys)
    post = np.zeros((L, V))
    for perm in itertools.permutations(range(V)):
        for t in range(L):
            lik = 1.0
            for i in range(t):
                lik *= noise / V + (1 - noise) * (perm[keys[i]] == shown[i])
            post[t, perm[keys[t]]] += lik
    return post / post.sum(1, keepdims=True)


@pytest.mark.parametrize("noise", [0.01, 0.2, 0.5])
def test_noisy_bijection_posterior_matches_brute_force(noise):
    V = 5
    t = make_task("bijection", V=V, L=V, noise=noise)
    b = t.sample(6, 11)
    ids = b.input_ids.numpy()
    for i in range(6):
        keys = ids[i, 0::2]
        shown = np.append(ids[i, 1::2] - V, 0)  # the last key's value is never shown
        np.testing.assert_allclose(b.posterior[i].numpy(),
                                   _brute_noisy_bijection(keys, shown, V, noise), atol=1e-12)
    # noise shows in the tokens (some shown value differs from the target) at the high rate
    if noise == 0.5:
        assert (b.input_ids[:, 1::2] - V != b.targets[:, :-1]).any()


def test_noisy_posterior_handles_repeated_shown_values():
    shown = np.array([[2, 2, 2, 0, 1, 0]])
    keys = np.arange(6)
    np.testing.assert_allclose(noisy_posterior(shown, 6, 0.3)[0],
                               _brute_noisy_bijection(keys, shown[0], 6, 0.3), atol=1e-12)


def test_noisy_bijection_is_calibrated_to_its_own_sampler():
    # E[p(target)] = E[Σ p²] holds iff the sampler draws targets from the stated posterior
    b = make_task("bijection", V=6, noise=0.3).sample(4000, 5)
    p_true = b.posterior.gather(-1, b.targets[..., None])[..., 0]
    sq = (b.posterior ** 2).sum(-1)
    diff = (p_true - sq).mean(0)
    se = (p_true - sq).std(0) / math.sqrt(4000)
    assert (diff.abs() < 4 * se + 1e-9).all()
    # and noise costs information: entropy above the noiseless log2(V - k + 1) after key 1
    assert (b.entropy_bits.mean(0)[1:] > torch.log2(7.0 - torch.arange(2, 6.0)).double()).all()


def test_noise_zero_keeps_the_old_streams_and_bad_combinations_are_refused():
    a = make_task("bijection", V=8).sample(4, 3)
    b = make_task("bijection", V=8, noise=0.0).sample(4, 3)
    assert torch.equal(a.input_ids, b.input_ids)
    for kw in ({"layout": "paired"}, {"replacement": True}, {"V": 500}):
        with pytest.raises(TaskConfigError):
            make_task("bijection", noise=0.1, **kw)
    with pytest.raises(TaskConfigError, match=r"noise must be <= 0\.5"):
        make_task("bijection", noise=0.6)


@pytest.mark.parametrize("kw", [{"V": 20}, {"V": 8, "L": 12, "replacement": True},
                                {"V": 10, "layout": "paired"},
                                {"V": 10, "layout": "paired", "query_from_context": False},
                                {"V": 6, "L": 6, "replacement": True, "layout": "paired"}])
def test_bijection_sparse_equals_dense_and_so_do_the_metrics(kw):
    b = make_task("bijection", **kw).sample(48, 3)
    sp = b.sparse
    assert isinstance(sp, SparsePosterior) and sp.support.shape[0] == 48
    np.testing.assert_allclose(sp.to_dense().numpy(), b.posterior.numpy(), atol=1e-15)
    np.testing.assert_allclose(sp.entropy_bits().numpy(), b.entropy_bits.numpy(), atol=1e-12)
    np.testing.assert_allclose(sp.top()[1].numpy(), b.posterior.max(-1).values.numpy())
    g = torch.Generator().manual_seed(0)
    logp = torch.log_softmax(2 * torch.randn(*b.posterior.shape, generator=g), -1)
    dense = calibration_stats(logp, b.posterior, b.targets)
    sparse = calibration_stats(logp, sp, b.targets)
    for name in dense.__dataclass_fields__:
        x, y = getattr(dense, name), getattr(sparse, name)
        assert torch.equal(torch.isnan(x), torch.isnan(y)), name
        torch.testing.assert_close(torch.nan_to_num(y), torch.nan_to_num(x), atol=5e-5,
                                   rtol=1e-5, msg=name)


def test_large_bijection_is_sparse_only_and_exact():
    t = make_task("bijection", V=100_000, L=40)
    b = t.sample(3, 0)
    assert b.posterior is None and b.sparse is not None
    assert t.batch_bytes(3, logits=False) < 1e6  # O(L), not O(L·V)
    np.testing.assert_allclose(b.entropy_bits.numpy(),
                               np.broadcast_to(np.log2(100_000 - np.arange(40.0)), (3, 40)))
    # every target is a value not revealed before it, with mass 1 / (V - k)
    p = b.sparse.prob_of(b.targets)
    np.testing.assert_allclose(p.numpy(), 1 / (100_000 - np.arange(40.0)) + 0 * p.numpy())
    assert len(set(b.targets[0].tolist())) == 40


def test_large_v_sampler_agrees_with_the_elimination_rule(monkeypatch):
    # the O(n·L) sampler used above DENSE_MAX_H, run at V = 7 so the posterior can be densified
    # and checked against the revealed values read back from the tokens
    for kw in ({"V": 7, "L": 9, "replacement": True, "layout": "paired"}, {"V": 7}):
        t = make_task("bijection", **kw)
        monkeypatch.setattr(t, "dense", False)
        b = t.sample(40, 2)
        d = b.dense_posterior().numpy()
        ids = b.input_ids.numpy()
        for i in range(40):
            keys, vals = ids[i, 0::2], ids[i, 1::2] - 7
            for j, qp in enumerate(b.query_pos.tolist()):
                k = ids[i, qp]
                prev_k, prev_v = keys[: qp // 2], vals[: qp // 2]
                if k in prev_k:
                    exp = np.eye(7)[prev_v[list(prev_k).index(k)]]
                else:
                    exp = np.ones(7)
                    exp[prev_v] = 0
                    exp /= exp.sum()
                np.testing.assert_allclose(d[i, j], exp, atol=1e-15)
                assert d[i, j, b.targets[i, j]] > 0


def test_sparse_metrics_at_large_v_match_a_dense_check():
    t = make_task("bijection", V=2000, L=12)
    b = t.sample(4, 1)
    g = torch.Generator().manual_seed(1)
    logp = torch.log_softmax(torch.randn(4, 12, 2000, generator=g), -1)
    s = calibration_stats(logp, b.sparse, b.targets)
    d = calibration_stats(logp, b.dense_posterior(), b.targets)  # small enough to check
    torch.testing.assert_close(s.kl_bayes_model, d.kl_bayes_model, atol=5e-4, rtol=1e-5)
    torch.testing.assert_close(s.tvd, d.tvd, atol=1e-5, rtol=1e-5)
    assert bayes_accuracy(t, n=4) == pytest.approx(float((1 / (2000 - np.arange(12))).mean()))


@pytest.mark.parametrize("kind,shape", [("gaussian", 1.0), ("generalised_gaussian", 0.7),
                                        ("generalised_gaussian", 4.0)])
def test_prior_weights_and_sampler(kind, shape):
    H, scale = 9, 0.3
    p = prior_weights(kind, H, scale, shape)
    z = (np.arange(H) - 4) / (scale * H)
    w = np.exp(-0.5 * z**2) if kind == "gaussian" else np.exp(-np.abs(z) ** shape)
    np.testing.assert_allclose(p, w / w.sum(), rtol=1e-13)
    draws = sample_from(stream(0, Purpose.EVAL), p, H, (200_000,))
    np.testing.assert_allclose(np.bincount(draws, minlength=H) / 2e5, p, atol=4e-3)
    assert prior_weights("uniform", H) is None


def test_noise_is_recorded_only_when_set_and_round_trips():
    from bayesgeom.windtunnel import token_task_from_config

    assert "noise" not in make_task("bijection", V=8).config()
    cfg = make_task("bijection", V=8, noise=0.25).config()
    assert cfg["noise"] == 0.25
    again = token_task_from_config(cfg)
    assert again.config() == cfg
    assert torch.equal(again.sample(3, 1).posterior,
                       make_task("bijection", V=8, noise=0.25).sample(3, 1).posterior)
