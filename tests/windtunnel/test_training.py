import json

import pandas as pd
import pytest
import torch

from bayesgeom.windtunnel import make_task
from bayesgeom.windtunnel.architectures import build_model
from bayesgeom.windtunnel.checkpoint import CheckpointError
from bayesgeom.windtunnel.evaluate import evaluate
from bayesgeom.windtunnel.runs import NotARunError, RunDirError, load_run
from bayesgeom.windtunnel.task import TaskConfigError
from bayesgeom.windtunnel.training import TrainConfig, lr_at, train

from ..conftest import Killed, die_at


def _cfg(**kw) -> TrainConfig:
    base = dict(
        task="bijection",
        task_params={"V": 6},
        preset="tiny",
        steps=40,
        batch_size=32,
        lr=5e-3,
        warmup_steps=5,
        eval_every=20,
        eval_size=64,
        final_eval_size=128,
        log_every=10,
        ckpt_every=10,
    )
    base.update(kw)
    return TrainConfig(**base)


def test_short_training_lowers_entropy_mae(tmp_path):
    cfg = _cfg(steps=250, eval_every=250, ckpt_every=250)
    task = make_task("bijection", V=6)
    before = evaluate(build_model(task, "transformer", "tiny", 0), task, n=256).entropy_mae_bits
    res = train(cfg, tmp_path / "run", progress=False)
    assert res.report.entropy_mae_bits < 0.5 * before
    for f in (
        "run.json",
        "eval.json",
        "metrics.parquet",
        "figures.html",
        "model/model.safetensors",
        "model/windtunnel.json",
    ):
        assert (tmp_path / "run" / f).exists(), f
    rec = json.loads((tmp_path / "run" / "run.json").read_text())
    assert rec["status"] == "done" and rec["manifest"]["versions"]["torch"]


def test_kill_and_resume_equals_uninterrupted(tmp_path):
    cfg = _cfg(log_every=7)
    full = train(cfg, tmp_path / "full", progress=False)

    die = die_at(25)

    with pytest.raises(Killed):
        train(cfg, tmp_path / "cut", on_step=die, progress=False)
    assert json.loads((tmp_path / "cut" / "run.json").read_text())["status"] == "running"
    resumed = train(cfg, tmp_path / "cut", progress=False)

    assert resumed.steps_done == full.steps_done == 40
    a, b = (
        load_run(tmp_path / "full").model.state_dict(),
        load_run(tmp_path / "cut").model.state_dict(),
    )
    assert all(torch.equal(a[k], b[k]) for k in a)
    assert resumed.report.entropy_mae_bits == full.report.entropy_mae_bits
    cols = [c for c in full.log.columns if c != "elapsed_s"]
    pd.testing.assert_frame_equal(full.log[cols], resumed.log[cols])


def test_rerun_of_finished_run_returns_it(tmp_path):
    cfg = _cfg(steps=10, eval_every=10)
    first = train(cfg, tmp_path / "r", progress=False)
    mtime = (tmp_path / "r" / "model" / "model.safetensors").stat().st_mtime_ns
    again = train(cfg, tmp_path / "r", progress=False)
    assert again.report.entropy_mae_bits == first.report.entropy_mae_bits
    assert (tmp_path / "r" / "model" / "model.safetensors").stat().st_mtime_ns == mtime


def test_output_dir_holding_another_run_is_refused_and_untouched(tmp_path):
    train(_cfg(steps=10, eval_every=10), tmp_path / "r", progress=False)
    before = (tmp_path / "r" / "eval.json").read_bytes()
    with pytest.raises(RunDirError, match="holds a finished windtunnel train run with other "
                       r"settings \(seed 0 -> 1\); choose another --out, or pass --restart"):
        train(_cfg(steps=10, eval_every=10, seed=1), tmp_path / "r", progress=False)
    assert (tmp_path / "r" / "eval.json").read_bytes() == before


def test_unrelated_nonempty_dir_is_refused(tmp_path):
    (tmp_path / "notes.txt").write_text("mine")
    with pytest.raises(RunDirError, match="not a bayesgeom run"):
        train(_cfg(), tmp_path, progress=False)
    assert (tmp_path / "notes.txt").read_text() == "mine"


def test_corrupt_checkpoint_is_reported(tmp_path):
    die = die_at(15)

    with pytest.raises(Killed):
        train(_cfg(), tmp_path / "r", on_step=die, progress=False)
    ck = tmp_path / "r" / "checkpoints" / "step-0000010"
    (ck / "model.safetensors").write_bytes(b"not a safetensors file")
    with pytest.raises(CheckpointError, match=r"step-0000010/model.safetensors .*--restart"):
        train(_cfg(), tmp_path / "r", progress=False)


def test_missing_run_is_reported(tmp_path):
    with pytest.raises(NotARunError, match="does not exist"):
        load_run(tmp_path / "nothing")
    (tmp_path / "x").mkdir()
    with pytest.raises(NotARunError, match="not a bayesgeom run"):
        load_run(tmp_path / "x")


def test_dense_early_checkpoints(tmp_path):
    train(_cfg(steps=30, dense_ckpt_until=20, dense_ckpt_every=5), tmp_path / "r", progress=False)
    dense = sorted(p.name for p in (tmp_path / "r" / "checkpoints").glob("dense-*"))
    assert dense == [f"dense-{s:07d}" for s in (5, 10, 15, 20)]


def test_hmm_soft_target_training_runs_and_evaluates_longer(tmp_path):
    cfg = _cfg(task="hmm", task_params={"K": 4, "max_K": 8}, steps=20, eval_every=20)
    train(cfg, tmp_path / "h", progress=False)
    run = load_run(tmp_path / "h")
    rep = evaluate(run.model, run.task.with_K(8), n=32)
    assert len(rep.per_position["h_bayes_bits"]) == 8
    assert len(rep.per_layer["kl_bits"]) == 2


def test_time_budget_stops_early(tmp_path):
    res = train(_cfg(steps=100_000, max_minutes=0.02), tmp_path / "r", progress=False)
    assert res.stop_reason == "time_budget" and res.steps_done < 100_000


def test_schedule_warms_up_then_decays():
    cfg = _cfg(steps=100, warmup_steps=10, lr=1.0, min_lr_ratio=0.1)
    assert lr_at(cfg, 0) == pytest.approx(0.1)
    assert lr_at(cfg, 9) == pytest.approx(1.0)
    assert lr_at(cfg, 100) == pytest.approx(0.1)
    assert lr_at(cfg, 55) == pytest.approx(0.55)
    # under a wall-time budget the decay follows elapsed time
    assert lr_at(cfg, 20, time_frac=1.0) == pytest.approx(0.1)
    assert lr_at(cfg, 20, time_frac=0.5) == pytest.approx(0.55)


def test_a_time_budgeted_run_shows_its_bar_over_the_budget(tmp_path, capsys):
    """The bar of a run with max_minutes counts seconds of the budget, not a step total it will
    never reach (the demo's MLP baselines ask for 1,000,000 steps)."""
    from bayesgeom.windtunnel.training import TrainConfig, train

    cfg = TrainConfig(task="bijection", task_params={"V": 6}, preset="tiny", steps=1_000_000,
                      batch_size=8, eval_every=10_000, eval_size=8, final_eval_size=16,
                      ckpt_every=10_000, warmup_steps=2, max_minutes=0.02)
    res = train(cfg, tmp_path / "run", progress=True)
    err = capsys.readouterr().err
    assert res.stop_reason == "time_budget"
    assert "s of the time budget" in err and "/1000000" not in err


def test_the_device_is_not_part_of_a_runs_identity(tmp_path):
    """A run started on one device is the same run on another (it resumes or is reused)."""
    from bayesgeom.windtunnel.training import TrainConfig, train

    cfg = TrainConfig(task="bijection", task_params={"V": 6}, preset="tiny", steps=4,
                      batch_size=8, eval_every=4, eval_size=8, final_eval_size=16,
                      ckpt_every=4, warmup_steps=1)
    first = train(cfg, tmp_path / "run", progress=False)
    again = train(TrainConfig(**{**cfg.__dict__, "device": "cpu"}), tmp_path / "run",
                  progress=False)
    assert again.report == first.report and again.wall_s == first.wall_s  # reused, not rerun


def _halve_embeddings(model) -> object:
    """A training-time intervention without interp (windtunnel never imports it): every
    forward pass sees the token embeddings halved."""
    return model.get_input_embeddings().register_forward_hook(lambda m, i, o: o * 0.5)


def test_a_prepare_hook_is_named_in_the_runs_identity_and_resumes_with_it(tmp_path):
    cfg = _cfg(steps=20, intervention="halve_emb")
    full = train(cfg, tmp_path / "full", progress=False, prepare=_halve_embeddings)

    die = die_at(12)

    with pytest.raises(Killed):
        train(cfg, tmp_path / "cut", on_step=die, progress=False, prepare=_halve_embeddings)
    resumed = train(cfg, tmp_path / "cut", progress=False, prepare=_halve_embeddings)
    a, b = (load_run(tmp_path / d).model.state_dict() for d in ("full", "cut"))
    assert all(torch.equal(a[k], b[k]) for k in a)
    assert resumed.report.entropy_mae_bits == full.report.entropy_mae_bits
    rec = json.loads((tmp_path / "full" / "run.json").read_text())
    assert rec["settings"]["intervention"] == "halve_emb"
    plain = train(_cfg(steps=20), tmp_path / "plain", progress=False)  # the hook changed training
    assert plain.report.entropy_mae_bits != full.report.entropy_mae_bits
    assert "intervention" not in json.loads((tmp_path / "plain" / "run.json").read_text())[
        "settings"]  # runs without a hook keep the identity they had before the field existed
    with pytest.raises(RunDirError):  # the unhooked settings are another (finished) run
        train(_cfg(steps=20), tmp_path / "full", progress=False)


def test_an_intervention_without_its_hook_and_a_hook_without_a_name_are_refused(tmp_path):
    with pytest.raises(TaskConfigError, match=r"needs train\(prepare=\.\.\.\)"):
        train(_cfg(intervention="halve_emb"), tmp_path / "a", progress=False)
    with pytest.raises(TaskConfigError, match=r"needs cfg\.intervention"):
        train(_cfg(), tmp_path / "b", progress=False, prepare=_halve_embeddings)
    assert not (tmp_path / "a").exists() and not (tmp_path / "b").exists()
