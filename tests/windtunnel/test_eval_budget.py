"""Evaluations that would not end are refused, with the estimate, before the work: ``eval
--n`` after its first batch, ``train --eval-size`` before the run folder is claimed.

The sizes (10**12 sequences: 2e9 batches) and a one-minute limit make every refusal certain on
any machine (a batch would have to take under 30 ns to pass), so no test can run away."""

from __future__ import annotations

import time

import pytest

from bayesgeom.analyses.cli import main
from bayesgeom.records import budget
from bayesgeom.windtunnel import TaskConfigError, make_task
from bayesgeom.windtunnel import training as training_module
from bayesgeom.windtunnel.architectures import build_model
from bayesgeom.windtunnel.evaluate import check_eval_time, evaluate
from bayesgeom.windtunnel.training import TrainConfig, train

HUGE = 10**12


@pytest.fixture(autouse=True)
def one_minute_limit(monkeypatch):
    monkeypatch.setattr(budget, "TIME_LIMIT", 60.0)


def test_the_estimate_is_the_time_of_one_batch_times_the_batches():
    check_eval_time(0.5, 100, "x", "--n", limit=60)  # 50 s: under the limit
    with pytest.raises(TaskConfigError, match=r"x would take about 0\.0 h .*\(200 batches of "
                                              r"0\.50 s; the limit is 0\.0166667 h; "
                                              r"BAYESGEOM_TIME_LIMIT_H raises it\); lower --n"):
        check_eval_time(0.5, 200, "x", "--n", limit=60)


def test_an_endless_evaluation_stops_after_one_batch():
    task = make_task("bijection", V=5)
    model = build_model(task, "transformer", "tiny")
    t0 = time.perf_counter()
    with pytest.raises(TaskConfigError, match="evaluating 1,000,000,000,000 sequences would "
                                              "take"):
        evaluate(model, task, n=HUGE)
    assert time.perf_counter() - t0 < 5
    assert evaluate(model, task, n=600).n_sequences == 600  # short ones are not timed


def test_train_refuses_an_endless_eval_size_before_claiming_its_folder(tmp_path, capsys):
    t0 = time.perf_counter()
    with pytest.raises(TaskConfigError, match="--eval-size 1,000,000,000,000 cannot end"):
        train(TrainConfig(preset="tiny", eval_size=HUGE), tmp_path / "run", progress=False)
    assert main(["windtunnel", "train", "--preset", "tiny", "--eval-size", str(HUGE),
                 "--out", str(tmp_path / "cli")]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and "lower --eval-size" in err[0], err
    assert time.perf_counter() - t0 < 10
    assert not (tmp_path / "run").exists() and not (tmp_path / "cli").exists()


def test_train_times_one_eval_batch_before_claiming_its_folder(tmp_path, monkeypatch):
    """An eval size the static floor lets through (500,000 sequences: 50 s at 0.1 ms each) is
    refused on the time of one batch (made 1 s here: 10,000 batches of 1 s > 60 s)."""
    monkeypatch.setattr(training_module, "batch_seconds", lambda *a, **k: 1.0)
    with pytest.raises(TaskConfigError, match=r"every 1000 steps would take about 2\.8 h .*"
                                              r"lower --eval-size or raise --eval-every"):
        train(TrainConfig(preset="tiny", eval_size=500_000), tmp_path / "run", progress=False)
    assert not (tmp_path / "run").exists()


def test_eval_of_a_run_refuses_an_endless_n_in_one_line(tmp_path, capsys):
    run = tmp_path / "B"
    train(TrainConfig(preset="tiny", steps=20, eval_size=16, final_eval_size=16), run,
          progress=False)
    t0 = time.perf_counter()
    assert main(["windtunnel", "eval", str(run), "--n", str(HUGE), "--no-progress"]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and "evaluating 1,000,000,000,000 sequences would take about" in err[0]
    assert "lower --n" in err[0] and time.perf_counter() - t0 < 5
