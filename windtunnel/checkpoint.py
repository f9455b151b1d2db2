"""Training checkpoints: a directory per checkpoint and an atomically replaced ``LATEST`` pointer.

Layout under ``<run>/checkpoints/``: ``step-000500/`` (``model.safetensors`` + ``config.json``
via ``save_pretrained``, ``optimizer.pt``, ``state.json``, ``log.csv`` and ``checksums.json``)
and ``LATEST`` naming the newest complete one. A checkpoint is written into a temporary folder,
checksummed (:func:`records.write_checksums`) and then renamed into place, so a kill at any
moment leaves ``LATEST`` pointing at a complete checkpoint. Dense checkpoints
(``dense-000100/``) hold the model only (with its checksums) and are kept.

Loading verifies the checksums when present, checks the safetensors file against its header and
refuses non-finite weights: a truncated, altered or damaged checkpoint is a one-line
:class:`CheckpointError` naming the file and the fix, never a silent resume. Only safetensors
weights are loaded (never pickle ``.bin`` files); the optimizer state is read with
``torch.load(weights_only=True)``.
"""

from __future__ import annotations

import contextlib
import re
import shutil
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pandas as pd
import torch
from transformers import AutoModelForCausalLM, PreTrainedModel
from transformers.utils import logging as hf_logging

from ..records import (
    SAFE_INDEX,
    FileFault,
    check_safetensors,
    has_checksums,
    make_dir,
    os_errors,
    read_json,
    read_table,
    safetensors_shards,
    verify_checksums,
    write_checksums,
    write_json,
    write_table,
    write_text,
)
from .arch_registry import saved_model_spec
from .architectures import register_auto_classes

hf_logging.disable_progress_bar()  # per-shard bars would drown the training progress bar

#: the fix for a damaged checkpoint of an unfinished run
RESTART_FIX = "rerun its windtunnel train command with --restart to train it again from step 0"
#: the fix for a damaged model directory outside a run
REPLACE_FIX = "the model is damaged; train or copy it again"
WEIGHTS = "model.safetensors"
#: a run's checkpoint folder, and the name prefixes of its resumable and its dense checkpoints
CHECKPOINTS, STEP, DENSE = "checkpoints", "step", "dense"
_NAME = re.compile(rf"({STEP}|{DENSE})-(\d+)")


def checkpoint_name(kind: str, step: int) -> str:
    """The folder name of checkpoint ``kind`` (:data:`STEP` or :data:`DENSE`) at ``step``:
    ``step-0000500``."""
    return f"{kind}-{step:07d}"


def parse_checkpoint_name(name: str) -> tuple[str, int] | None:
    """(kind, step) of a checkpoint folder name (:func:`checkpoint_name`); None for any other
    name (``LATEST``, a ``.tmp-*`` folder)."""
    m = _NAME.fullmatch(name)
    return (m[1], int(m[2])) if m else None


@dataclass(frozen=True)
class Snapshot:
    """A saved model of a run: ``kind`` ``"dense"`` (model-only checkpoint), ``"checkpoint"``
    (resumable) or ``"final"`` (the run's ``model/``); ``step`` in optimiser steps; ``path``
    the model directory (:func:`load_model` opens it)."""

    step: int
    kind: str
    path: Path


def list_snapshots(root: Path) -> list[Snapshot]:
    """Every checkpoint folder under ``root`` (a run's :data:`CHECKPOINTS`), sorted by folder
    name (at one step the dense one first); [] when ``root`` does not exist. The folders are
    listed, not verified."""
    if not root.is_dir():
        return []
    with as_checkpoint_error(), os_errors(root, writing=False):
        named = [(parse_checkpoint_name(d.name), d) for d in sorted(root.iterdir()) if d.is_dir()]
    return [Snapshot(n[1], "dense" if n[0] == DENSE else "checkpoint", d) for n, d in named if n]


class CheckpointError(FileFault):
    """A checkpoint or saved model is missing, incomplete, altered or corrupt (a fault, exit
    status 1; an ``OSError`` too, as every :class:`records.FileFault`)."""


@contextlib.contextmanager
def as_checkpoint_error() -> Iterator[None]:
    """Re-raise a :class:`records.FileFault` from the block as a :class:`CheckpointError`
    with the same one-line message."""
    try:
        yield
    except CheckpointError:
        raise
    except FileFault as e:
        raise CheckpointError(str(e)) from e


@dataclass
class Checkpoint:
    model: PreTrainedModel
    optimizer_state: dict[str, Any]
    state: dict[str, Any]
    log: pd.DataFrame


def save_model_files(model: PreTrainedModel, d: Path) -> None:
    """``model.save_pretrained(d)`` (safetensors); an I/O error, which safetensors reports as
    its own error type with the OS error number, becomes a one-line ``FileFault``."""
    with os_errors(d):
        try:
            model.save_pretrained(d, safe_serialization=True)
        except OSError:
            raise
        except Exception as e:  # safetensors' SafetensorError: "... (os error 28) ..."
            code = re.search(r"os error (\d+)", str(e))
            if code is None:
                raise
            raise OSError(int(code.group(1)), str(e)) from e


def _move_into_place(tmp: Path, d: Path) -> None:
    """Checksum ``tmp`` and rename it to ``d`` (replacing an older ``d``)."""
    write_checksums(tmp)
    with os_errors(d):
        shutil.rmtree(d, ignore_errors=True)
        tmp.rename(d)


def _fresh_tmp(tmp: Path) -> None:
    with os_errors(tmp):
        shutil.rmtree(tmp, ignore_errors=True)


def save_checkpoint(
    root: Path,
    step: int,
    model: PreTrainedModel,
    optimizer: torch.optim.Optimizer,
    state: dict[str, Any],
    log: pd.DataFrame,
    keep_last: int = 1,
) -> Path:
    """Write checkpoint ``step`` under ``root`` (checksummed, renamed into place), point
    ``LATEST`` at it and delete all but the ``keep_last`` newest ``step-*`` folders."""
    make_dir(root)
    d = root / checkpoint_name(STEP, step)
    tmp = root / f".tmp-{d.name}"
    _fresh_tmp(tmp)
    save_model_files(model, tmp)
    with os_errors(tmp / "optimizer.pt"):
        torch.save(optimizer.state_dict(), tmp / "optimizer.pt")
    write_json(tmp / "state.json", {**state, "step": step})
    write_table(tmp / "log.csv", log)
    _move_into_place(tmp, d)
    write_text(root / "LATEST", d.name + "\n")
    olds = sorted(p for p in root.glob(f"{STEP}-*") if p.is_dir() and p.name != d.name)
    for p in olds[: max(0, len(olds) - (keep_last - 1))]:
        shutil.rmtree(p, ignore_errors=True)
    return d


def save_dense(root: Path, step: int, model: PreTrainedModel) -> Path:
    """Write the model-only checkpoint ``dense-<step>`` (checksummed) under ``root``."""
    make_dir(root)
    d = root / checkpoint_name(DENSE, step)
    tmp = root / f".tmp-{d.name}"
    _fresh_tmp(tmp)
    save_model_files(model, tmp)
    _move_into_place(tmp, d)
    return d


def latest_checkpoint_dir(root: Path) -> Path | None:
    """The checkpoint ``LATEST`` names, or None when there is none yet."""
    ptr = root / "LATEST"
    if not ptr.exists():
        return None
    with as_checkpoint_error(), os_errors(ptr, writing=False):
        name = ptr.read_text(encoding="utf-8", errors="replace").strip()
    d = root / name
    if not name or "/" in name or not d.is_dir():
        raise CheckpointError(f"{ptr} names {name!r}, which is not a checkpoint folder; "
                              f"the run directory is damaged; {RESTART_FIX}")
    return d


def _nonfinite(tensors: Any) -> bool:
    if isinstance(tensors, torch.Tensor):
        return tensors.is_floating_point() and not bool(torch.isfinite(tensors).all())
    if isinstance(tensors, dict):
        return any(_nonfinite(v) for v in tensors.values())
    if isinstance(tensors, list | tuple):
        return any(_nonfinite(v) for v in tensors)
    return False


def weight_files(path: Path, fix: str) -> list[Path]:
    """The safetensors files of a model directory: ``model.safetensors``, or the shards its
    ``model.safetensors.index.json`` lists (``save_pretrained(max_shard_size=...)``'s layout,
    as the committed paper-scale tunnels use to keep each file under 16 MiB). No weights, a
    missing shard, or pickle weights alone: :class:`CheckpointError` ending in ``fix``."""
    if (path / WEIGHTS).is_file():
        return [path / WEIGHTS]
    if (path / SAFE_INDEX).is_file():
        shards = [path / n for n in safetensors_shards(path / SAFE_INDEX, fix=fix)]
        missing = [s.name for s in shards if not s.is_file()]
        if missing:
            raise CheckpointError(f"{path} lacks {missing[0]} (listed in {SAFE_INDEX}); {fix}")
        return shards
    bins = sorted(p.name for p in path.glob("*.bin"))
    extra = f" ({', '.join(bins)} is pickle, which is never loaded)" if bins else ""
    raise CheckpointError(f"no weights at {path} ({WEIGHTS} missing{extra}); {fix}")


def load_model(path: str | Path, fix: str = REPLACE_FIX) -> PreTrainedModel:
    """Load a saved wind-tunnel model directory (safetensors only; its checksums verified when
    it has them). Missing, truncated, altered or non-finite weights raise a one-line
    :class:`CheckpointError` naming the file and ending in ``fix``."""
    path = Path(path)
    with as_checkpoint_error():
        if not (path / "config.json").is_file():
            raise CheckpointError(f"no model at {path} (config.json missing); {fix}")
        weights = weight_files(path, fix)
        if has_checksums(path):
            verify_checksums(path, fix=fix)
        for w in weights:
            check_safetensors(w, fix=fix)
        cfg = read_json(path / "config.json", expect=dict, fix=fix)
    try:
        # the kernels and forward it trained with (its arch's SavedModelSpec): identical logits
        saved = saved_model_spec(cfg.get("model_type"))
        register_auto_classes()  # the wind tunnels' own classes
        model = AutoModelForCausalLM.from_pretrained(
            path, use_safetensors=True, **(dict(saved.load_kwargs) if saved else {}))
        if saved is not None and saved.after_load is not None:
            saved.after_load(model)
    except Exception as e:  # safetensors / config errors have many types
        raise CheckpointError(f"corrupt model at {path}: {type(e).__name__}: "
                              f"{str(e).splitlines()[0] if str(e) else ''}; {fix}") from e
    if _nonfinite(model.state_dict()):
        shown = weights[0] if len(weights) == 1 else f"{path}/{weights[0].stem}…"
        raise CheckpointError(f"{shown} holds non-finite weights (NaN or inf): the "
                              f"file is damaged; {fix}")
    return model


def load_checkpoint(d: Path, fix: str = RESTART_FIX) -> Checkpoint:
    """Load and verify a resumable checkpoint (model, optimizer state, counters, log)."""
    model = load_model(d, fix)
    with as_checkpoint_error():
        state = read_json(d / "state.json", expect=dict,
                          keys=("step", "elapsed_s", "run_loss", "run_n"), fix=fix)
        log = read_table(d / "log.csv", columns=("step",), fix=fix)
        with os_errors(d / "optimizer.pt", writing=False):
            try:
                opt = torch.load(d / "optimizer.pt", weights_only=True, map_location="cpu")
            except OSError:
                raise
            except Exception as e:
                raise CheckpointError(f"{d / 'optimizer.pt'} is not a readable optimizer "
                                      f"state ({type(e).__name__}); {fix}") from e
    if not isinstance(opt, dict) or "state" not in opt:
        raise CheckpointError(f"{d / 'optimizer.pt'} holds no optimizer state; {fix}")
    if _nonfinite(opt["state"]):
        raise CheckpointError(f"{d / 'optimizer.pt'} holds non-finite values (NaN or inf): "
                              f"the checkpoint is damaged; {fix}")
    return Checkpoint(model, opt, state, log)
