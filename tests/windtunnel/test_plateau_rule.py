"""The plateau rule: when it says a curve has stopped improving, a run stopping on it (the
reason recorded, resumable exactly), and its options out of older runs' identity."""

import json

import pytest

from bayesgeom.windtunnel.plateau_rule import plateaued
from bayesgeom.windtunnel.task import TaskConfigError
from bayesgeom.windtunnel.training import TrainConfig, train

from ..conftest import Killed, die_at


def test_a_flat_curve_plateaus_and_a_falling_one_does_not():
    assert plateaued([1.0, 1.0, 1.0, 1.0], window=3, tol=0.0)
    assert not plateaued([1.0, 1.0, 1.0], window=3, tol=0.0)  # nothing before the window
    assert not plateaued([1.0, 0.5, 0.25, 0.12], window=2, tol=0.1)
    assert plateaued([1.0, 0.5, 0.49, 0.495], window=2, tol=0.05)  # 2 % < 5 %
    assert not plateaued([1.0, 0.5, 0.49, 0.40], window=2, tol=0.05)
    assert plateaued([1.0, float("nan"), 1.0], window=1, tol=0.0)  # NaN left out
    with pytest.raises(ValueError):
        plateaued([1.0], window=0, tol=0.1)


def _cfg(**kw) -> TrainConfig:
    base = dict(task="bijection", task_params={"V": 6}, preset="tiny", steps=40, batch_size=16,
                warmup_steps=1, eval_every=2, eval_size=32, final_eval_size=32, log_every=2,
                ckpt_every=4, plateau_window=1, plateau_tol=0.99)
    base.update(kw)
    return TrainConfig(**base)


def test_a_run_stops_on_the_plateau_and_records_why(tmp_path):
    # tol 0.99: only a 100-fold drop counts, so the second evaluation (step 4) ends the run
    res = train(_cfg(), tmp_path / "run", progress=False)
    assert (res.stop_reason, res.steps_done) == ("plateau", 4)
    rec = json.loads((tmp_path / "run" / "run.json").read_text())
    assert rec["stop_reason"] == "plateau" and rec["steps_done"] == 4
    assert rec["config"]["plateau_window"] == 1 and rec["config"]["plateau_metric"] == "kl_bits"
    # a kill before the stop resumes to the same step and numbers
    die = die_at(3)
    with pytest.raises(Killed):
        train(_cfg(), tmp_path / "cut", on_step=die, progress=False)
    again = train(_cfg(), tmp_path / "cut", progress=False)
    assert (again.stop_reason, again.steps_done) == ("plateau", 4)
    assert again.report.kl_bits == res.report.kl_bits


def test_the_rule_off_leaves_the_settings_as_before():
    task = _cfg().validate()
    off = _cfg(plateau_window=0, plateau_tol=0.5).settings(task)
    assert not any(k.startswith("plateau_") for k in off)
    assert _cfg().settings(task)["plateau_tol"] == 0.99


def test_bad_plateau_options_are_refused():
    with pytest.raises(TaskConfigError, match="plateau_metric"):
        _cfg(plateau_metric="loss").validate()
    with pytest.raises(TaskConfigError, match="plateau_tol"):
        _cfg(plateau_tol=1.0).validate()


def test_the_first_step_the_rule_can_stop_a_run_at():
    from bayesgeom.windtunnel.plateau_rule import first_decision, unreachable

    assert first_decision(window=1, eval_every=2, warmup_steps=1) == 4  # 2 evaluations
    assert first_decision(window=5, eval_every=50, warmup_steps=300) == 350  # after warm-up
    assert unreachable(5, 50, 300, steps=351) is None and unreachable(0, 50, 300, 10) is None
    assert "first decides at step 350" in unreachable(5, 50, 300, steps=350)
