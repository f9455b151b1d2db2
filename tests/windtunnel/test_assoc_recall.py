"""Associative recall (spec §1.4): layout, exact posteriors against brute-force enumeration of
the key→value maps, the binding variant's 0 / log2 V entropies, options and a tiny train/eval."""

import itertools
import json
import math

import numpy as np
import pytest
import torch

from bayesgeom.analyses.cli import main
from bayesgeom.records import UsageError
from bayesgeom.records.errors import exit_code
from bayesgeom.windtunnel import AssocRecallTask, TaskConfigError, make_task, task_from_config
from bayesgeom.windtunnel.assoc_recall import FILLER, KEY_OFFSET, PAD, QUERY, SEP, STORE
from bayesgeom.windtunnel.training import TrainConfig, train

SMALL_RECALL = {"N": 3, "M": 2, "F": 3, "n_keys": 4, "n_values": 5}
SMALL_BINDING = {"variant": "binding", "N": 7, "n_keys": 3, "n_values": 3}


def _brute_force(pairs, key, n_keys, n_values, injective):
    """p(value of ``key`` | shown ``pairs``) by enumerating every map keys -> values (all
    injections for the recall variant, all functions for binding), uniform prior, keeping those
    that agree with every shown pair."""
    maps = (itertools.permutations(range(n_values), n_keys) if injective
            else itertools.product(range(n_values), repeat=n_keys))
    counts = np.zeros(n_values)
    for m in maps:
        if all(m[k] == v for k, v in pairs):
            counts[m[key]] += 1
    return counts / counts.sum()


def test_defaults_are_the_spec_generator():
    t = make_task("assoc_recall")
    assert isinstance(t, AssocRecallTask)
    assert t.config() == {"task": "assoc_recall", "variant": "recall", "N": 64, "M": 3, "F": 32,
                          "n_keys": 256, "n_values": 256}
    assert t.vocab_size == 522 and t.hyp_slice == slice(266, 522)
    assert t.seq_len == 4 * 64 + 32 + 3 * 3 + 2 * 16 == 329 and t.n_queries == 3
    b = make_task("assoc_recall", variant="binding")
    assert b.config() == {"task": "assoc_recall", "variant": "binding", "N": 19, "M": None,
                          "F": None, "n_keys": 20, "n_values": 20}
    assert (b.vocab_size, b.hyp_slice, b.seq_len, b.n_queries) == (40, slice(20, 40), 37, 19)
    for task in (t, b):  # config() rebuilds the same task
        assert task_from_config(task.config()).config() == task.config()


def test_recall_layout_and_posterior_match_brute_force():
    t = make_task("assoc_recall", **SMALL_RECALL)
    N, M, F, nk, nv = 3, 2, 3, 4, 5
    b = t.sample(40, seed=0)
    ids = b.input_ids.numpy()
    assert ids.shape == (40, 4 * N + F + 3 * M + (M - 1) * (F // 2))
    vb = KEY_OFFSET + nk
    assert t.hyp_slice == slice(vb, vb + nv) and t.vocab_size == vb + nv
    qpos = b.query_pos.tolist()
    assert qpos == [4 * N + F + 1, 4 * N + F + 3 + F // 2 + 1]
    for i in range(40):
        s = ids[i]
        assert (s[0:4 * N:4] == STORE).all() and (s[2:4 * N:4] == SEP).all()
        keys, vals = s[1:4 * N:4] - KEY_OFFSET, s[3:4 * N:4] - vb
        assert len(set(keys)) == N and len(set(vals)) == N  # without replacement
        assert (keys < nk).all() and (vals < nv).all() and min(keys.min(), vals.min()) >= 0
        assert (s[4 * N:4 * N + F] == FILLER).all()
        qkeys = [s[p] - KEY_OFFSET for p in qpos]
        assert len(set(qkeys)) == M and set(qkeys) <= set(keys)  # distinct stored keys
        for j, p in enumerate(qpos):
            assert s[p - 1] == QUERY and s[p + 1] == PAD
            bf = _brute_force(list(zip(keys, vals, strict=True)), qkeys[j], nk, nv, True)
            np.testing.assert_array_equal(b.posterior[i, j].numpy(), bf)
            assert b.targets[i, j] == vals[list(keys).index(qkeys[j])]
        between = s[qpos[0] + 2:qpos[1] - 1]
        assert len(between) == F // 2 and (between == FILLER).all()
    assert b.posterior.dtype == torch.float64 and (b.entropy_bits == 0).all()
    assert not torch.signbit(b.entropy_bits).any()  # 0, not -0


def test_binding_posterior_matches_brute_force_and_entropies_are_0_or_log2_V():
    t = make_task("assoc_recall", **SMALL_BINDING)
    N, nk, nv = 7, 3, 3
    b = t.sample(60, seed=1)
    ids = b.input_ids.numpy()
    assert ids.shape == (60, 2 * N - 1) and b.query_pos.tolist() == list(range(0, 2 * N, 2))
    keys = ids[:, 0::2]
    vals = ids[:, 1::2] - nk
    assert (keys < nk).all() and (vals < nv).all() and min(keys.min(), vals.min()) >= 0
    n_seen = 0
    for i in range(60):
        for q in range(N):
            pairs = list(zip(keys[i, :q], vals[i, :q], strict=True))
            bf = _brute_force(pairs, keys[i, q], nk, nv, False)
            np.testing.assert_allclose(b.posterior[i, q].numpy(), bf, rtol=0, atol=1e-15)
            seen = keys[i, q] in keys[i, :q]
            n_seen += seen
            h = b.entropy_bits[i, q].item()
            if seen:
                assert h == 0.0
                assert b.targets[i, q] == vals[i, list(keys[i, :q]).index(keys[i, q])]
            else:
                assert h == pytest.approx(math.log2(nv), abs=1e-12)
            if q < N - 1:  # the next token is the value the map gives (repeats agree)
                assert b.targets[i, q] == vals[i, q]
    assert 0 < n_seen < 60 * N
    # with replacement, values may repeat across different keys
    assert any(len(set(vals[i])) < len(set(keys[i])) for i in range(60))


def test_binding_at_the_authors_size_is_0_or_log2_20():
    b = make_task("assoc_recall", variant="binding").sample(256, seed=2)
    h = b.entropy_bits.numpy()
    assert set(np.unique(np.round(h, 12))) == {0.0, round(math.log2(20), 12)}
    keys = b.input_ids.numpy()[:, 0::2]
    seen = np.array([[k[q] in k[:q] for q in range(19)] for k in keys])
    np.testing.assert_array_equal(h == 0, seen)


@pytest.mark.parametrize("params", [SMALL_RECALL, SMALL_BINDING])
def test_sampling_is_deterministic_in_the_seed(params):
    t = make_task("assoc_recall", **params)
    a, b, c = t.sample(16, (7, 0)), t.sample(16, (7, 0)), t.sample(16, (7, 1))
    for x, y in ((a.input_ids, b.input_ids), (a.posterior, b.posterior), (a.targets, b.targets)):
        assert torch.equal(x, y)
    assert not torch.equal(a.input_ids, c.input_ids)


BAD = [
    ({"N": 300}, "N=300 pairs cannot draw distinct keys from n_keys=256"),
    ({"N": 10, "n_keys": 20, "n_values": 8}, "cannot draw distinct values from n_values=8"),
    ({"N": 4, "M": 5}, "M=5 queries cannot be distinct stored keys of N=4 pairs"),
    ({"variant": "binding", "M": 2}, "M applies to variant='recall' only"),
    ({"variant": "binding", "M": 2, "F": 0}, "M and F apply to variant='recall' only"),
    ({"variant": "nope"}, "variant must be one of recall, binding"),
    ({"N": 0}, "N must be >= 1, got 0"),
    ({"n_values": 1}, "n_values must be >= 2, got 1"),
    ({"F": -1}, "F must be >= 0, got -1"),
]


@pytest.mark.parametrize("params, msg", BAD, ids=[str(p) for p, _ in BAD])
def test_bad_options_are_one_line_usage_errors_from_api_and_cli(params, msg, capsys):
    with pytest.raises(TaskConfigError) as e:
        make_task("assoc_recall", **params)
    assert msg in str(e.value) and "\n" not in str(e.value)
    assert isinstance(e.value, UsageError) and exit_code(e.value) == 2
    argv = ["windtunnel", "sample", "--task", "assoc_recall"]
    for k, v in params.items():
        argv.append(f"--{k.replace('_', '-')}={v}")
    capsys.readouterr()
    code = main(argv)
    err = capsys.readouterr().err
    assert code == 2 and err.count("\n") == 1
    if params != {"variant": "nope"}:  # argparse refuses the bad choice with its own words
        assert err == f"bayesgeom: error: {e.value}\n"


def test_a_batch_too_large_is_refused_naming_the_options():
    t = make_task("assoc_recall", N=4, M=2, F=0, n_keys=8, n_values=10**10)
    with pytest.raises(TaskConfigError, match=r"assoc_recall N=4 M=2 F=0 n_keys=8 "
                       r"n_values=10000000000 needs about .*exact posteriors "
                       r"\[2, 2, 10000000000\].*lower "
                       r"--N or --M or --F or --n-keys or --n-values or the number"):
        t.sample(2, 0)


def test_sample_cli_json_and_text(capsys):
    assert main(["windtunnel", "sample", "--task", "assoc_recall", "--n", "2", "--json"]) == 0
    rec = json.loads(capsys.readouterr().out)
    assert rec["task"]["variant"] == "recall" and rec["tokens"]["vocab_size"] == 522
    assert rec["tokens"]["specials"]["QUERY"] == QUERY
    seq = rec["sequences"][0]
    assert len(seq["tokens"]) == 329 and len(seq["supervised"]) == 3
    for s in seq["supervised"]:
        assert s["entropy_bits"] == 0 and seq["tokens"][s["position"] - 1] == QUERY
        assert s["posterior"][s["target_token"] - 266] == 1
    assert main(["windtunnel", "sample", "--task", "assoc_recall", "--variant", "binding",
                 "--n", "1"]) == 0
    out = capsys.readouterr().out
    assert out.startswith("sequence 0: 37 tokens") and "H_Bayes=4.3219 bits" in out
    assert main(["windtunnel", "sample", "--task", "bijection", "--N", "3"]) == 2
    assert "does not apply to task 'bijection'" in capsys.readouterr().err


@pytest.mark.parametrize("params", [SMALL_RECALL, SMALL_BINDING], ids=["recall", "binding"])
def test_tiny_training_run_and_eval_report_finite_metrics(params, tmp_path, capsys):
    cfg = TrainConfig(task="assoc_recall", task_params=dict(params), preset="tiny", steps=4,
                      batch_size=16, warmup_steps=1, eval_every=4, eval_size=16,
                      final_eval_size=16, ckpt_every=4)
    res = train(cfg, tmp_path / "api", progress=False)  # what `windtunnel train` runs
    assert res.steps_done == 4
    for v in (res.report.entropy_mae_bits, res.report.kl_bits, res.report.accuracy):
        assert math.isfinite(v)
    capsys.readouterr()
    assert main(["windtunnel", "eval", str(tmp_path / "api"), "--n", "32", "--json"]) == 0
    rep = json.loads(capsys.readouterr().out.strip().splitlines()[-1])
    assert rep["task"] == "assoc_recall" and rep["task_config"]["variant"] == params.get(
        "variant", "recall")
    for k in ("entropy_mae_bits", "kl_bits", "tvd", "accuracy"):
        assert math.isfinite(rep[k]), k
