import math

import numpy as np
import pytest
import torch

from bayesgeom.windtunnel import TaskConfigError, make_task
from bayesgeom.windtunnel.metrics import Accumulator, calibration_stats, report_from


def test_entropy_curve_is_log2_remaining_values():
    b = make_task("bijection", V=20).sample(64, seed=0)
    expected = np.log2(21 - np.arange(1, 20))
    np.testing.assert_allclose(b.entropy_bits.numpy(), np.broadcast_to(expected, (64, 19)))
    assert b.entropy_bits.mean().item() == pytest.approx(3.2146, abs=5e-5)


def test_sepvocab_layout_and_posterior_support():
    t = make_task("bijection", V=20)
    b = t.sample(8, seed=1)
    ids = b.input_ids
    assert ids.shape == (8, 37) and t.vocab_size == 40 and t.hyp_slice == slice(20, 40)
    assert (ids[:, 0::2] < 20).all() and (ids[:, 1::2] >= 20).all()
    assert b.query_pos.tolist() == list(range(0, 37, 2))
    # the target (value of the key at each query) is the next token, and has posterior mass
    nxt = ids[:, 1::2] - 20
    assert torch.equal(b.targets[:, :-1], nxt)
    p_true = b.posterior.gather(-1, b.targets[..., None])[..., 0]
    assert (p_true > 0).all()
    # revealed values have zero mass
    for i in range(8):
        for q in range(1, 19):
            assert b.posterior[i, q, nxt[i, :q]].sum() == 0
    assert torch.allclose(b.posterior.sum(-1), torch.ones(8, 19, dtype=torch.float64))


def test_context_blind_uniform_predictor_scores_1_1073_bits():
    t = make_task("bijection", V=20, L=19)
    b = t.sample(256, seed=2)
    logp = torch.full((256, 19, 20), -math.log(20.0))
    acc = Accumulator()
    acc.add(calibration_stats(logp, b.posterior, b.targets))
    assert report_from(acc).entropy_mae_bits == pytest.approx(1.1073, abs=5e-5)


def test_with_replacement_gives_sawtooth():
    b = make_task("bijection", V=6, L=12, replacement=True).sample(50, seed=3)
    keys = b.input_ids[:, 0::2]
    for i in range(50):
        for q in range(12):
            seen = keys[i, q].item() in keys[i, :q].tolist()
            h = b.entropy_bits[i, q].item()
            if seen:
                assert h == 0.0
            else:
                distinct = len(set(keys[i, :q].tolist()))
                assert h == pytest.approx(math.log2(6 - distinct))
    assert (b.entropy_bits == 0).any()


def test_paired_layout_query_from_context_is_a_delta():
    t = make_task("bijection", V=10, layout="paired")
    b = t.sample(16, seed=4)
    assert b.input_ids.shape == (16, 2 * 9 + 1)
    assert b.query_pos[-1].item() == 18
    assert (b.entropy_bits[:, -1] == 0).all()
    q = b.input_ids[:, -1]
    keys, vals = b.input_ids[:, 0:-1:2], b.input_ids[:, 1:-1:2] - 10
    for i in range(16):
        j = keys[i].tolist().index(q[i].item())
        assert b.targets[i, -1] == vals[i, j]


def test_sampling_is_deterministic_and_fresh():
    t = make_task("bijection")
    a, b, c = t.sample(32, (7, 0)), t.sample(32, (7, 0)), t.sample(32, (7, 1))
    assert torch.equal(a.input_ids, b.input_ids)
    assert not torch.equal(a.input_ids, c.input_ids)
    # a fresh permutation per sequence: the 32 value orders are (almost surely) distinct
    assert len({tuple(r) for r in a.targets.tolist()}) == 32


@pytest.mark.parametrize(
    "params, msg",
    [
        ({"V": 1}, "V must be >= 2"),
        ({"V": 5, "L": 6}, "without replacement"),
        ({"layout": "x"}, "layout"),
        ({"Q": 3}, "no parameter"),
    ],
)
def test_bad_task_parameters(params, msg):
    with pytest.raises(TaskConfigError, match=msg):
        make_task("bijection", **params)


def test_unknown_task():
    with pytest.raises(TaskConfigError, match="unknown task 'nope'; available: assoc_recall, "
                                              "bijection, hmm, long_recall, sula"):
        make_task("nope")
