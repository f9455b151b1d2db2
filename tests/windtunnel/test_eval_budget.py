"""Evaluations that would not end are refused, with the estimate, before the work: ``eval
--n`` after its first batch, ``train --eval-size`` before the run folder is claimed."""

from __future__ import annotations

import time

import pytest

from bayesgeom.analyses.cli import main
from bayesgeom.windtunnel import TaskConfigError, make_task
from bayesgeom.windtunnel.architectures import build_model
from bayesgeom.windtunnel.evaluate import check_eval_time, evaluate
from bayesgeom.windtunnel.training import TrainConfig, train


def test_the_estimate_is_the_time_of_one_batch_times_the_batches():
    check_eval_time(0.5, 100, "x", "--n", limit=60)  # 50 s: under the limit
    with pytest.raises(TaskConfigError, match=r"x would take about 0\.0 h .*\(200 batches of "
                                              r"0\.50 s; the limit is 0\.0166667 h\); lower --n"):
        check_eval_time(0.5, 200, "x", "--n", limit=60)


def test_an_endless_evaluation_stops_after_one_batch():
    task = make_task("bijection", V=5)
    model = build_model(task, "transformer", "tiny")
    t0 = time.perf_counter()
    with pytest.raises(TaskConfigError, match="evaluating 1,000,000,000 sequences would take"):
        evaluate(model, task, n=10**9)
    assert time.perf_counter() - t0 < 5
    assert evaluate(model, task, n=600).n_sequences == 600  # short ones are not timed


def test_train_refuses_an_endless_eval_size_before_claiming_its_folder(tmp_path, capsys):
    t0 = time.perf_counter()
    with pytest.raises(TaskConfigError, match="every 1000 steps would take about"):
        train(TrainConfig(preset="tiny", eval_size=10**9), tmp_path / "run", progress=False)
    assert main(["windtunnel", "train", "--preset", "tiny", "--eval-size", "1000000000",
                 "--out", str(tmp_path / "cli")]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and "lower --eval-size or raise --eval-every" in err[0], err
    assert time.perf_counter() - t0 < 10
    assert not (tmp_path / "run").exists() and not (tmp_path / "cli").exists()
