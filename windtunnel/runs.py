"""Wind-tunnel run directories: claiming one for a training run, checking a finished one before
it is reused, and opening a finished or unfinished one.

A run directory holds ``run.json``, ``checkpoints/``, and when finished ``model/`` (safetensors
+ ``windtunnel.json`` naming task and architecture, with its ``checksums.json``),
``metrics.parquet``, ``eval.json``, ``figures.html`` and ``checksums.json`` (of ``eval.json``
and ``metrics.parquet``). ``run.json`` is a :class:`records.RunDir` record of experiment
:data:`EXPERIMENT` (``"windtunnel train"``): fingerprint, settings and status, plus the
configuration (``config``), the task (``task``), ``manifest``, ``params``,
``resumed_from_step`` and, when done, ``stop_reason``, ``steps_done`` and ``wall_s``.

A training run holds its folder as a :class:`records.RunDir` of experiment :data:`EXPERIMENT`
(a second process gets a one-line :class:`records.RunBusyError`); :func:`read_finished`
verifies a finished run's files before its metrics are reused; :func:`load_run` opens a run
directory, a saved model directory, or a checkpoint directory inside a run, and returns the
model with the task it was trained on; :func:`read_run` reads a run's record, training log and
snapshots without loading a model (:class:`RunRecord`) -- this package is the only one that
knows the layout, and analyses read run folders only through these.
A ``run.json`` of another bayesgeom experiment (geometry, steer ...) is not a wind-tunnel run.

Example:
    >>> from pathlib import Path
    >>> is_windtunnel_dir(Path("/nonexistent"))
    False
"""

from __future__ import annotations

import shutil
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pandas as pd
from transformers import PreTrainedModel

from ..records import (
    InputFileError,
    RunDirError,
    has_checksums,
    os_errors,
    read_json,
    read_table,
    verify_checksums,
    write_checksums,
    write_json,
    write_table,
)
from .architectures import n_params
from .checkpoint import (
    CHECKPOINTS,
    RESTART_FIX,
    CheckpointError,
    Snapshot,
    as_checkpoint_error,
    latest_checkpoint_dir,
    list_snapshots,
    load_model,
    save_model_files,
)
from .metrics import CalibrationReport
from .run_identity import EXPERIMENT, MODEL_RECORD, RUN_RECORD, is_windtunnel_dir, record_kind
from .task import TaskConfigError, TokenTask
from .task_registry import token_task_from_config
from .train_config import TrainConfig

__all__ = ["EXPERIMENT", "LOG", "MODEL_RECORD", "RUN_RECORD", "LoadedRun", "NotARunError",
           "RunDirError", "RunRecord", "Snapshot", "find_run", "is_windtunnel_dir", "load_run",
           "log_frame", "read_finished", "read_run", "save_final_model", "write_finished"]

#: the training log of a finished run
LOG = "metrics.parquet"
#: the files of a finished run whose content is reused (checksummed in ``checksums.json``)
REUSED = ("eval.json", LOG)
LOG_COLUMNS = ("step", "elapsed_s", "train_loss", "lr", "eval_entropy_mae_bits",
               "eval_entropy_mae_curve_bits", "eval_kl_bits", "eval_tvd", "eval_accuracy")
#: the fix for a damaged finished run
FINISHED_FIX = "rerun its windtunnel train command with --restart to train it again"


class NotARunError(InputFileError):
    """A path given as a run that does not exist or holds no wind-tunnel run (exit status 2)."""


@dataclass
class LoadedRun:
    """A trained model with the task it was trained on (``eval`` and analyses use this)."""

    model: PreTrainedModel
    task: TokenTask | None
    arch: str
    steps: int
    path: Path


def read_finished(out: Path) -> tuple[dict[str, Any], pd.DataFrame]:
    """``eval.json`` and ``metrics.parquet`` of a finished run, after verifying them and
    ``model/`` against their checksums; a missing, truncated or altered file is a one-line
    :class:`CheckpointError` naming it, never a silent reuse."""
    with as_checkpoint_error():
        for d in (out, out / "model"):
            if not has_checksums(d):
                raise CheckpointError(f"{d / 'checksums.json'} is missing, so the run's files "
                                      f"cannot be verified; {FINISHED_FIX}")
            verify_checksums(d, fix=FINISHED_FIX)
        summary = read_json(out / "eval.json", expect=dict, keys=("params", "entropy_mae_bits"),
                            fix=FINISHED_FIX)
        log = read_table(out / LOG, columns=("step",), fix=FINISHED_FIX)
    return summary, log


def _task(cfg: Any, where: Path, fix: str) -> TokenTask:
    """The task a record describes; a record that names none it can rebuild is damaged."""
    try:
        if not isinstance(cfg, dict) or "task" not in cfg:
            raise TaskConfigError("no task name")
        return token_task_from_config(cfg)
    except (TaskConfigError, TypeError) as e:
        raise CheckpointError(f"{where} holds no usable task record ({e}); {fix}") from e


def load_run(path: str | Path) -> LoadedRun:
    """Open a run directory (its final model, checksums verified, or the latest checkpoint of
    an unfinished run), a bare model directory written by training, or a checkpoint directory
    (``<run>/checkpoints/step-N``, task read from the run). A path that does not exist or
    holds no run: :class:`NotARunError` (usage); a damaged file: :class:`CheckpointError`
    naming it."""
    path = Path(path)
    if not path.exists():
        raise NotARunError(f"{path} does not exist")
    with as_checkpoint_error():
        if (path / MODEL_RECORD).exists():
            meta = read_json(path / MODEL_RECORD, expect=dict, keys=("task", "arch"),
                             fix=FINISHED_FIX)
            return LoadedRun(load_model(path, FINISHED_FIX),
                             _task(meta["task"], path / MODEL_RECORD, FINISHED_FIX),
                             str(meta["arch"]), -1, path)
        kind, other = record_kind(path)
        if kind == "other":
            raise _other_run(path, other)
        if kind is None:
            if not (path / "config.json").exists():
                raise NotARunError(f"{path} is not a bayesgeom run (no {RUN_RECORD}, "
                                   f"{MODEL_RECORD} or model)")
            run_json = path.parent.parent / RUN_RECORD  # <run>/checkpoints/step-N
            task = None
            if record_kind(path.parent.parent)[0] == "run":
                rec = read_json(run_json, expect=dict, keys=("task",), fix=FINISHED_FIX)
                task = _task(rec["task"], run_json, FINISHED_FIX)
            return LoadedRun(load_model(path, RESTART_FIX), task, "?", -1, path)
        rec_path = path / RUN_RECORD
        fix = f"delete {path} and train it again"
        rec = read_json(rec_path, expect=dict, keys=("config", "task"), fix=fix)
        task = _task(rec["task"], rec_path, fix)
        arch = rec["config"].get("arch") if isinstance(rec["config"], dict) else None
        if not isinstance(arch, str):
            raise CheckpointError(f"{rec_path} names no architecture (config.arch); {fix}")
        if rec.get("status") == "done":  # finished: its final model, never a checkpoint
            if not (path / "model").is_dir():
                raise CheckpointError(f"{path} is a finished run without its model/ folder; "
                                      f"{fix}")
            steps = rec.get("steps_done")
            if not isinstance(steps, int):
                raise CheckpointError(f"{rec_path} has no step count (steps_done); {fix}")
            return LoadedRun(load_model(path / "model", FINISHED_FIX), task, arch, steps, path)
        ck = latest_checkpoint_dir(path / CHECKPOINTS)
        if ck is None:
            raise CheckpointError(f"{path} has no checkpoint yet; train it first")
        state = read_json(ck / "state.json", expect=dict, keys=("step",), fix=RESTART_FIX)
        return LoadedRun(load_model(ck, RESTART_FIX), task, arch, int(state["step"]), path)


def _other_run(path: Path, other: dict[str, Any] | None) -> NotARunError:
    """The error for a folder whose ``run.json`` is another bayesgeom experiment's."""
    what = other.get("experiment") if other else None
    return NotARunError(f"{path} holds a bayesgeom {what} run, not a wind-tunnel training run"
                        if what else f"{path / RUN_RECORD} is not a wind-tunnel run record "
                        "(it has no config and task)")


@dataclass(frozen=True)
class RunRecord:
    """A wind-tunnel run folder, read from its ``run.json`` (``record``, whole) without loading
    a model: ``config`` the training configuration as recorded (:attr:`train_config`: as a
    :class:`TrainConfig`), ``arch`` and ``seed`` from it (None where it lacks them),
    ``steps_done`` (optimiser steps; None until finished), ``status`` (``"done"`` when
    finished); the training log and the snapshots on request (:meth:`log`, :meth:`snapshots`)."""

    path: Path
    record: dict[str, Any]
    config: dict[str, Any]
    arch: str | None
    seed: int | None
    steps_done: int | None
    status: str | None

    @property
    def train_config(self) -> TrainConfig:
        return TrainConfig.from_json(self.config)

    @property
    def model_dir(self) -> Path:
        """The final model (``model/``; it exists once :attr:`finished`)."""
        return self.path / "model"

    @property
    def finished(self) -> bool:
        return self.status == "done" and self.model_dir.is_dir()

    @property
    def log_path(self) -> Path:
        """The training log file (:data:`LOG`, written when the run finishes)."""
        return self.path / LOG

    def log(self, columns: tuple[str, ...] = ("step",)) -> pd.DataFrame:
        """The training log holding ``columns`` (:data:`LOG_COLUMNS`, a monitor's; a row per
        logged step, losses in nats, errors in bits); missing or damaged: a CheckpointError."""
        with as_checkpoint_error():
            return read_table(self.log_path, columns=columns, fix=FINISHED_FIX)

    def snapshots(self) -> list[Snapshot]:
        """The run's saved models in step order, one per step (at one step the final model
        replaces a checkpoint, which replaces a dense one: they hold the same weights); the
        final model at :attr:`steps_done` (else the configured steps) when finished."""
        found = {s.step: s for s in list_snapshots(self.path / CHECKPOINTS)}
        if self.finished:
            final = self.steps_done if self.steps_done is not None else self.train_config.steps
            found[final] = Snapshot(final, "final", self.model_dir)
        return [found[s] for s in sorted(found)]


def read_run(path: str | Path) -> RunRecord:
    """The :class:`RunRecord` of run directory ``path`` (finished or not). A path that does not
    exist or holds no wind-tunnel run: :class:`NotARunError` (usage); a damaged ``run.json``:
    :class:`CheckpointError` naming it."""
    path = Path(path)
    kind, other = record_kind(path)
    if kind is None:
        raise NotARunError(f"{path} does not exist" if not path.exists() else
                           f"{path} is not a wind-tunnel run directory (no {RUN_RECORD})")
    if kind == "other":
        raise _other_run(path, other)
    rec_path, fix = path / RUN_RECORD, f"delete {path} and train it again"
    with as_checkpoint_error():
        rec = read_json(rec_path, expect=dict, keys=("config",), fix=fix)
    if not isinstance(conf := rec["config"], dict):
        raise CheckpointError(f"{rec_path} holds no training configuration (config); {fix}")

    def typed(v: Any, t: type) -> Any:
        return v if isinstance(v, t) else None
    return RunRecord(path, rec, conf, typed(conf.get("arch"), str), typed(conf.get("seed"), int),
                     typed(rec.get("steps_done"), int), typed(rec.get("status"), str))


def find_run(path: str | Path, up: int = 2) -> RunRecord | None:
    """The :class:`RunRecord` of the run holding ``path``: ``path`` itself or one of its ``up``
    nearest parents (``<run>/model``: 1, ``<run>/checkpoints/step-N``: 2) that is a
    wind-tunnel run directory; None when none is (a Hugging Face model, a bare model)."""
    p = Path(path)
    for d in (p, *p.parents[:up]):
        if record_kind(d)[0] in ("run", "damaged"):
            return read_run(d)
    return None


def log_frame(rows: list[dict[str, Any]]) -> pd.DataFrame:
    """The training log (``metrics.parquet``, a checkpoint's ``log.csv``) from its rows: the
    standard columns, then any others (a training monitor's) in order of first appearance."""
    extra = dict.fromkeys(k for r in rows for k in r if k not in LOG_COLUMNS)
    return pd.DataFrame(rows, columns=[*LOG_COLUMNS, *extra])


def write_finished(out: Path, model: PreTrainedModel, task: TokenTask, arch: str, preset: str,
                   seed: int, steps: int, report: CalibrationReport,
                   log_rows: list[dict[str, Any]]) -> pd.DataFrame:
    """Write a finished run's outputs -- ``model/``, ``metrics.parquet``, ``eval.json``,
    ``figures.html`` -- and the checksums of the reused ones (before it is marked done);
    returns the log."""
    from .figures import training_figures

    save_final_model(out, model, task, arch, preset, seed)
    log = log_frame(log_rows)
    write_table(out / LOG, log)
    write_json(out / "eval.json", {
        "task": task.name, "task_config": task.config(), "arch": arch, "preset": preset,
        "params": n_params(model), "steps": steps, "seed": seed,
        "entropy_mae_metric": "per-sample mean |H_model - H_Bayes| (bits)",
        **report.to_dict()})
    training_figures(out / "figures.html", log, report, title=f"{arch} on {task.name}")
    write_checksums(out, REUSED)
    return log


def save_final_model(out: Path, model: PreTrainedModel, task: TokenTask, arch: str,
                     preset: str, seed: int) -> Path:
    """Write ``out/model`` (safetensors + ``windtunnel.json`` + ``checksums.json``) via a
    temporary sibling renamed into place; OS errors are one-line ``FileFault`` s."""
    tmp, final = out / ".tmp-model", out / "model"
    with os_errors(tmp):
        shutil.rmtree(tmp, ignore_errors=True)
    save_model_files(model, tmp)
    write_json(tmp / MODEL_RECORD,
               {"task": task.config(), "arch": arch, "preset": preset, "seed": seed})
    write_checksums(tmp)
    with os_errors(final):
        shutil.rmtree(final, ignore_errors=True)
        tmp.rename(final)
    return final

