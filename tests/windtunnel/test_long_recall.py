"""long_recall: layout, exact posterior against brute-force enumeration, sparse == dense,
length scaling without quadratic memory, determinism, and training end to end."""

import itertools
import math

import numpy as np
import pytest
import torch

from bayesgeom.windtunnel import TaskConfigError, make_task, make_token_task
from bayesgeom.windtunnel.evaluate import bayes_accuracy, evaluate
from bayesgeom.windtunnel.long_recall import FILLER, KEY_BASE, QUERY, recall_posterior
from bayesgeom.windtunnel.metrics import calibration_stats
from bayesgeom.windtunnel.seeds import Purpose, stream
from bayesgeom.windtunnel.training import TrainConfig, train


def _records(task, ids):
    """Shown record keys and values (indices) of one sequence, in order."""
    body = ids[:-2]
    kpos = np.flatnonzero((body >= KEY_BASE) & (body < task.value_base))
    return body[kpos] - KEY_BASE, body[kpos + 1] - task.value_base


def _brute(x, y, kstar, K, V, noise, prior):
    """p(answer | shown keys x, values y) by enumerating the needle, the distractors' true
    keys and values, and the answer, with each shown token a noisy copy of the true one."""
    R = len(x)
    pr = np.full(V, 1 / V) if prior is None else prior
    key_ch = lambda shown, true: (1 - noise) * (shown == true) + noise / K  # noqa: E731
    val_ch = lambda shown, true: (1 - noise) * (shown == true) + noise / V  # noqa: E731
    others = [k for k in range(K) if k != kstar]
    post = np.zeros(V)
    for h in range(V):
        for n in range(R):
            rest = [i for i in range(R) if i != n]
            tot = 0.0
            for ks in itertools.product(others, repeat=R - 1):
                for vs in itertools.product(range(V), repeat=R - 1):
                    lik = key_ch(x[n], kstar) * val_ch(y[n], h)
                    for i, k, v in zip(rest, ks, vs, strict=True):
                        lik *= key_ch(x[i], k) * val_ch(y[i], v) * pr[v] / (K - 1)
                    tot += lik
            post[h] += pr[h] * tot / R
    return post / post.sum()


@pytest.mark.parametrize("noise,prior,extra", [
    (0.0, "uniform", {}), (0.01, "uniform", {}), (0.3, "uniform", {}), (0.5, "uniform", {}),
    (0.2, "gaussian", {"prior_scale": 0.3}),
    (0.4, "generalised_gaussian", {"prior_scale": 0.2, "prior_shape": 3.0})])
def test_posterior_matches_brute_force(noise, prior, extra):
    t = make_task("long_recall", length=8, record_every=2, key_vocab=3, value_vocab=4,
                  noise=noise, prior=prior, **extra)
    assert t.n_records == 3
    b = t.sample(5, 7)
    ids = b.input_ids.numpy()
    for i in range(5):
        x, y = _records(t, ids[i])
        kstar = ids[i, -1] - KEY_BASE
        np.testing.assert_allclose(b.posterior[i, 0].numpy(),
                                   _brute(x, y, kstar, 3, 4, noise, t.prior), atol=1e-12)
    np.testing.assert_allclose(b.sparse.to_dense().numpy(), b.posterior.numpy(), atol=1e-15)


def test_layout_and_targets():
    t = make_task("long_recall", length=50, key_vocab=16, value_vocab=16, noise=0.0)
    b = t.sample(20, 1)
    ids = b.input_ids.numpy()
    assert ids.shape == (20, 50) and b.query_pos.tolist() == [49] and t.n_records == 12
    assert (ids[:, -2] == QUERY).all() and t.vocab_size == 34 and t.hyp_slice == slice(18, 34)
    for i in range(20):
        x, y = _records(t, ids[i])
        assert len(x) == 12 and (ids[i, :-2] != QUERY).all()
        # without noise exactly one record shows the query key; its value is the answer
        hit = np.flatnonzero(x == ids[i, -1] - KEY_BASE)
        assert hit.size == 1 and y[hit[0]] == b.targets[i, 0]
        assert (ids[i, :-2][ids[i, :-2] < KEY_BASE] == FILLER).all()
    assert (b.entropy_bits == 0).all() and (b.posterior.max(-1).values == 1).all()


def test_sampler_is_calibrated_and_the_posterior_depends_on_length():
    t = make_task("long_recall", length=18, record_every=2, key_vocab=4, value_vocab=6,
                  noise=0.3, prior="gaussian", prior_scale=0.3)
    b = t.sample(6000, 3)
    p_true = b.sparse.prob_of(b.targets)[:, 0]
    sq = (b.posterior[:, 0] ** 2).sum(-1)
    assert abs(float((p_true - sq).mean())) < 4 * float((p_true - sq).std()) / math.sqrt(6000)
    # longer sequences: more records that may be the needle, a flatter posterior
    h = [float(t.with_length(L).sample(2000, 4).entropy_bits.mean()) for L in (18, 66, 258)]
    acc = [bayes_accuracy(t.with_length(L), n=2000) for L in (18, 66, 258)]
    assert h[0] < h[1] < h[2] and acc[0] > acc[1] > acc[2]


def test_sparse_and_dense_metrics_agree():
    t = make_task("long_recall", length=40, key_vocab=8, value_vocab=12, noise=0.2,
                  prior="generalised_gaussian", prior_shape=2.0, prior_scale=0.1)
    b = t.sample(64, 2)
    g = torch.Generator().manual_seed(0)
    logp = torch.log_softmax(2 * torch.randn(64, 1, 12, generator=g), -1)
    d = calibration_stats(logp, b.posterior, b.targets)
    s = calibration_stats(logp, b.sparse, b.targets)
    for name in d.__dataclass_fields__:
        x, y = getattr(d, name), getattr(s, name)
        assert torch.equal(torch.isnan(x), torch.isnan(y)), name
        torch.testing.assert_close(torch.nan_to_num(y), torch.nan_to_num(x), atol=5e-5,
                                   rtol=1e-5, msg=name)
    np.testing.assert_allclose(b.sparse.entropy_bits().numpy(),
                               (-(b.posterior * torch.log2(b.posterior)).sum(-1)).numpy(),
                               atol=1e-12)


def test_huge_value_space_is_sparse():
    t = make_task("long_recall", length=200, value_vocab=1_000_000, noise=0.1,
                  prior="gaussian")
    b = t.sample(3, 0)
    assert b.posterior is None and b.sparse.support.shape == (3, t.n_records)
    assert np.isfinite(b.entropy_bits.numpy()).all() and (b.entropy_bits > 0).all()
    g = torch.Generator().manual_seed(0)
    logp = torch.log_softmax(torch.randn(3, 1, 1_000_000, generator=g), -1)
    st = calibration_stats(logp, b.sparse, b.targets)
    assert torch.isfinite(st.kl_bayes_model).all() and (st.kl_bayes_model > 0).all()
    assert ((st.tvd > 0) & (st.tvd <= 1)).all()


def test_long_lengths_sample_linearly_and_deterministically():
    t = make_token_task("long_recall", length=40)
    a = t.sample_at(40 * 500, 2, stream(0, Purpose.EVAL, 0))
    again = t.with_length(20_000).sample(2, stream(0, Purpose.EVAL, 0))
    other = t.sample_at(20_000, 2, stream(0, Purpose.EVAL, 1))
    assert a.input_ids.shape == (2, 20_000) and a.query_pos.tolist() == [19_999]
    assert torch.equal(a.input_ids, again.input_ids)
    assert not torch.equal(a.input_ids, other.input_ids)
    assert a.sparse.support.shape == (2, (20_000 - 2) // 4)  # O(records), nothing [T, T]
    long = t.with_length(20_000)
    assert long.hyp_slice == t.hyp_slice and long.vocab_size == t.vocab_size
    assert long.max_seq_len == 20_000 and t.max_seq_len == 40
    assert long.batch_bytes(1, logits=False) < 1e6


def test_bad_options_are_refused():
    with pytest.raises(TaskConfigError, match="prior_shape applies"):
        make_task("long_recall", prior="gaussian", prior_shape=3.0)
    with pytest.raises(TaskConfigError, match="length"):
        make_task("long_recall", length=5, record_every=4)
    with pytest.raises(TaskConfigError, match="noise"):
        make_task("long_recall", noise=0.7)
    with pytest.raises(ValueError, match="exactly one record"):
        recall_posterior(np.array([[0, 0]]), np.array([[1, 2]]), np.array([0]), 2, 3, 0.0)


def test_tiny_training_run_end_to_end(tmp_path):
    cfg = TrainConfig(task="long_recall", task_params={"length": 24, "key_vocab": 8,
                                                       "value_vocab": 8, "noise": 0.1,
                                                       "max_length": 48},
                      preset="tiny", steps=6, batch_size=16, warmup_steps=2, eval_every=6,
                      eval_size=32, final_eval_size=32, log_every=3, ckpt_every=6)
    res = train(cfg, tmp_path / "run", progress=False)
    assert res.steps_done == 6 and res.report is not None
    assert math.isfinite(res.report.kl_bits) and 0 <= res.report.accuracy <= 1
    assert res.report.mean_bayes_entropy_bits > 0
    from bayesgeom.windtunnel.runs import load_run

    run = load_run(tmp_path / "run")  # learned positions: the table was sized by max_length
    rep = evaluate(run.model, run.task.with_length(48), n=16, logit_lens=False)
    assert math.isfinite(rep.kl_bits)
