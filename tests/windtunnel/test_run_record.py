"""``read_run`` / ``find_run``: a run folder's record, training log and snapshots read through
:mod:`windtunnel.runs` alone (finished and unfinished runs, the holder of a model or checkpoint
path, one-line errors for a missing, foreign or damaged run), and the checkpoint names
:mod:`windtunnel.checkpoint` defines."""

from __future__ import annotations

import dataclasses
import json
import shutil
from pathlib import Path

import pytest

import bayesgeom as bg
from bayesgeom.records import exit_code
from bayesgeom.windtunnel.checkpoint import (
    CHECKPOINTS,
    DENSE,
    STEP,
    CheckpointError,
    checkpoint_name,
    parse_checkpoint_name,
)
from bayesgeom.windtunnel.runs import (
    LOG,
    RUN_RECORD,
    NotARunError,
    RunRecord,
    find_run,
    load_run,
    read_run,
)
from bayesgeom.windtunnel.training import TrainConfig, train

from ..conftest import Killed, die_at

TINY = dict(task="bijection", task_params={"V": 5}, preset="tiny", batch_size=16, lr=5e-3,
            warmup_steps=1, eval_size=16, final_eval_size=16, eval_every=3, ckpt_every=3,
            dense_ckpt_until=4, dense_ckpt_every=2)


@pytest.fixture(scope="module")
def finished(tmp_path_factory) -> Path:
    out = tmp_path_factory.mktemp("record") / "run"
    train(TrainConfig(steps=6, seed=3, **TINY), out, progress=False)
    return out


@pytest.fixture(scope="module")
def unfinished(tmp_path_factory) -> Path:
    out = tmp_path_factory.mktemp("record") / "cut"
    with pytest.raises(Killed):
        train(TrainConfig(steps=6, **TINY), out, on_step=die_at(5), progress=False)
    return out


@pytest.fixture
def run_copy(finished, tmp_path) -> Path:
    out = tmp_path / "run"
    shutil.copytree(finished, out, ignore=shutil.ignore_patterns(".bayesgeom.lock"))
    return out


def test_a_finished_run_reads_its_record_log_and_snapshots(finished):
    rec = read_run(finished)
    assert isinstance(rec, RunRecord) and rec.path == finished
    assert (rec.arch, rec.seed, rec.steps_done, rec.status) == ("transformer", 3, 6, "done")
    assert rec.finished and rec.model_dir == finished / "model"
    assert rec.record["experiment"] == "windtunnel train" and rec.config["preset"] == "tiny"
    tc = rec.train_config
    assert isinstance(tc, TrainConfig)
    assert (tc.steps, tc.seed, tc.dense_ckpt_until, tc.task_params["V"]) == (6, 3, 4, 5)
    log = rec.log(columns=("step", "eval_entropy_mae_bits"))
    assert rec.log_path == finished / LOG and log["step"].iloc[-1] == 6
    assert log["eval_entropy_mae_bits"].dropna().size >= 2
    snaps = rec.snapshots()
    assert [(s.step, s.kind) for s in snaps] == [(2, "dense"), (4, "dense"), (6, "final")]
    assert snaps[0].path == finished / CHECKPOINTS / checkpoint_name(DENSE, 2)
    assert snaps[-1].path == finished / "model"
    with pytest.raises(dataclasses.FrozenInstanceError):
        rec.steps_done = 7  # type: ignore[misc]
    assert bg.read_run is read_run


def test_a_snapshot_opens_with_its_task(finished):
    snap = read_run(finished).snapshots()[0]
    got = load_run(snap.path)
    assert got.task is not None and got.task.name == "bijection"


def test_a_finished_run_without_its_model_is_refused_not_read_from_a_checkpoint(run_copy):
    """``eval`` opened the last checkpoint of such a run silently; ``train`` refuses it."""
    shutil.rmtree(run_copy / "model")
    with pytest.raises(CheckpointError, match=r"is a finished run without its model/ folder; "
                                              r"delete .* and train it again") as e:
        load_run(run_copy)
    assert exit_code(e.value) == 1


def test_an_unfinished_run_lists_its_checkpoints_and_no_final_model(unfinished):
    rec = read_run(unfinished)
    assert rec.status != "done" and rec.steps_done is None and not rec.finished
    assert [(s.step, s.kind) for s in rec.snapshots()] == [
        (2, "dense"), (3, "checkpoint"), (4, "dense")]
    with pytest.raises(CheckpointError, match=f"{LOG} is missing") as e:
        rec.log()
    assert "\n" not in str(e.value)


def test_find_run_finds_the_run_holding_a_model_or_a_checkpoint(finished, tmp_path):
    dense = finished / CHECKPOINTS / checkpoint_name(DENSE, 2)
    assert find_run(finished).path == finished
    assert find_run(finished / "model").path == finished
    assert find_run(dense).path == finished
    assert find_run(dense, up=1) is None and find_run(finished / "model", up=0) is None
    assert find_run(tmp_path) is None


def test_a_missing_or_foreign_folder_is_a_one_line_usage_error(tmp_path, finished):
    with pytest.raises(NotARunError, match="does not exist"):
        read_run(tmp_path / "nowhere")
    with pytest.raises(NotARunError, match=f"is not a wind-tunnel run directory .no {RUN_RECORD}"):
        read_run(finished / "model")
    geo = tmp_path / "geo"
    geo.mkdir()
    (geo / RUN_RECORD).write_text(json.dumps({"experiment": "geometry", "status": "done"}))
    with pytest.raises(NotARunError, match="holds a bayesgeom geometry run") as e:
        read_run(geo)
    assert exit_code(e.value) == 2 and find_run(geo) is None


@pytest.mark.parametrize("text, msg", [
    ("{not json", r"run.json is not valid JSON \(line 1\)"),
    ("[1, 2]", "run.json holds a JSON list, expected a dict"),
    (json.dumps({"experiment": "windtunnel train", "task": {}}), "run.json lacks config"),
    (json.dumps({"experiment": "windtunnel train", "config": [1]}),
     r"run.json holds no training configuration \(config\)"),
])
def test_a_damaged_record_is_a_one_line_fault(run_copy, text, msg):
    (run_copy / RUN_RECORD).write_text(text)
    for read in (read_run, find_run):
        with pytest.raises(CheckpointError, match=msg) as e:
            read(run_copy)
        assert "\n" not in str(e.value) and exit_code(e.value) == 1
        assert "train it again" in str(e.value)


def test_checkpoint_names_round_trip():
    assert checkpoint_name(STEP, 500) == "step-0000500"
    assert parse_checkpoint_name(checkpoint_name(DENSE, 100)) == (DENSE, 100)
    assert parse_checkpoint_name("step-12") == (STEP, 12)
    for other in ("LATEST", ".tmp-step-0000001", "step-", "dense-1x", "model"):
        assert parse_checkpoint_name(other) is None
