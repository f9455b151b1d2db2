"""Wind-tunnel run directories: claiming one for a run, and opening a finished or unfinished one.

A run directory holds ``run.json`` (configuration, task, manifest, status), ``checkpoints/``,
and when finished ``model/`` (safetensors + ``windtunnel.json`` naming task and architecture),
``metrics.parquet``, ``eval.json`` and ``figures.html``. :func:`load_run` opens a run
directory, a saved model directory, or a checkpoint directory inside a run, and returns the model
with the task it was trained on -- this package is the only one that knows the layout.

Example:
    >>> from pathlib import Path
    >>> is_windtunnel_dir(Path("/nonexistent"))
    False
"""

from __future__ import annotations

import json
import shutil
from dataclasses import dataclass
from pathlib import Path

from transformers import PreTrainedModel

from records import read_json, write_json
from windtunnel.checkpoint import CheckpointError, latest_checkpoint_dir, load_model
from windtunnel.task import TokenTask, token_task_from_config


class RunDirError(RuntimeError):
    """The output directory holds something else (another run, unrelated files)."""


RUN_RECORD = "run.json"
MODEL_RECORD = "windtunnel.json"


@dataclass
class LoadedRun:
    """A trained model with the task it was trained on (``eval`` and analyses use this)."""

    model: PreTrainedModel
    task: TokenTask | None
    arch: str
    steps: int
    path: Path


def is_windtunnel_dir(path: Path) -> bool:
    """True for a run directory, a saved wind-tunnel model or a checkpoint inside a run."""
    if not path.is_dir():
        return False
    if (path / RUN_RECORD).exists() or (path / MODEL_RECORD).exists():
        return True
    cfg = path / "config.json"
    if not cfg.exists():
        return False
    try:
        c = json.loads(cfg.read_text())
    except json.JSONDecodeError:
        return False
    return "bayesgeom_preset" in c or c.get("model_type") == "bayesgeom_mlp"


def load_run(path: str | Path) -> LoadedRun:
    """Open a run directory (its final model, or the latest checkpoint of an unfinished run),
    a bare model directory written by training, or a checkpoint directory
    (``<run>/checkpoints/step-N``, task read from the run)."""
    path = Path(path)
    if not path.exists():
        raise CheckpointError(f"{path} does not exist")
    if (path / MODEL_RECORD).exists():
        meta = read_json(path / MODEL_RECORD)
        return LoadedRun(load_model(path), token_task_from_config(meta["task"]), meta["arch"], -1,
                         path)
    rec_path = path / RUN_RECORD
    if not rec_path.exists():
        if not (path / "config.json").exists():
            raise CheckpointError(f"{path} is not a bayesgeom run (no {RUN_RECORD}, "
                                  f"{MODEL_RECORD} or model)")
        run_json = path.parent.parent / RUN_RECORD  # <run>/checkpoints/step-N
        task = token_task_from_config(read_json(run_json)["task"]) if run_json.exists() else None
        return LoadedRun(load_model(path), task, "?", -1, path)
    try:
        rec = json.loads(rec_path.read_text())
    except json.JSONDecodeError as e:
        raise CheckpointError(f"{rec_path} is corrupt: {e}") from e
    task = token_task_from_config(rec["task"])
    arch = rec["config"]["arch"]
    if rec.get("status") == "done" and (path / "model").exists():
        return LoadedRun(load_model(path / "model"), task, arch, int(rec["steps_done"]), path)
    ck = latest_checkpoint_dir(path / "checkpoints")
    if ck is None:
        raise CheckpointError(f"{path} has no checkpoint yet")
    state = read_json(ck / "state.json")
    return LoadedRun(load_model(ck), task, arch, int(state["step"]), path)


def save_final_model(out: Path, model: PreTrainedModel, task: TokenTask, arch: str,
                     preset: str, seed: int) -> Path:
    """Write ``out/model`` (safetensors + ``windtunnel.json``) via a temporary sibling."""
    tmp, final = out / ".tmp-model", out / "model"
    shutil.rmtree(tmp, ignore_errors=True)
    model.save_pretrained(tmp, safe_serialization=True)
    write_json(tmp / MODEL_RECORD,
               {"task": task.config(), "arch": arch, "preset": preset, "seed": seed})
    shutil.rmtree(final, ignore_errors=True)
    tmp.rename(final)
    return final
