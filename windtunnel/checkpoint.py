"""Training checkpoints: a directory per checkpoint and an atomically replaced ``LATEST`` pointer.

Layout under ``<run>/checkpoints/``: ``step-000500/`` (``model.safetensors`` + ``config.json``
via ``save_pretrained``, ``optimizer.pt``, ``state.json``, ``log.csv``) and ``LATEST`` naming the
newest complete one. A kill at any moment leaves ``LATEST`` pointing at a complete checkpoint.
Dense checkpoints (``dense-000100/``) hold the model only and are kept.
"""

from __future__ import annotations

import json
import shutil
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pandas as pd
import torch
from transformers import AutoModelForCausalLM, PreTrainedModel
from transformers.utils import logging as hf_logging

import windtunnel.mlp  # noqa: F401  (registers the MLP baselines with the Auto classes)
from records import write_json, write_table, write_text

hf_logging.disable_progress_bar()  # per-shard bars would drown the training progress bar


class CheckpointError(RuntimeError):
    """A checkpoint is missing, incomplete or corrupt."""


@dataclass
class Checkpoint:
    model: PreTrainedModel
    optimizer_state: dict[str, Any]
    state: dict[str, Any]
    log: pd.DataFrame


def save_checkpoint(
    root: Path,
    step: int,
    model: PreTrainedModel,
    optimizer: torch.optim.Optimizer,
    state: dict[str, Any],
    log: pd.DataFrame,
    keep_last: int = 1,
) -> Path:
    root.mkdir(parents=True, exist_ok=True)
    d = root / f"step-{step:07d}"
    tmp = root / f".tmp-step-{step:07d}"
    shutil.rmtree(tmp, ignore_errors=True)
    model.save_pretrained(tmp, safe_serialization=True)
    torch.save(optimizer.state_dict(), tmp / "optimizer.pt")
    write_json(tmp / "state.json", {**state, "step": step})
    write_table(tmp / "log.csv", log)
    shutil.rmtree(d, ignore_errors=True)
    tmp.rename(d)
    write_text(root / "LATEST", d.name + "\n")
    olds = sorted(p for p in root.glob("step-*") if p.is_dir() and p.name != d.name)
    for p in olds[: max(0, len(olds) - (keep_last - 1))]:
        shutil.rmtree(p, ignore_errors=True)
    return d


def save_dense(root: Path, step: int, model: PreTrainedModel) -> Path:
    d = root / f"dense-{step:07d}"
    tmp = root / f".tmp-dense-{step:07d}"
    shutil.rmtree(tmp, ignore_errors=True)
    model.save_pretrained(tmp, safe_serialization=True)
    shutil.rmtree(d, ignore_errors=True)
    tmp.rename(d)
    return d


def latest_checkpoint_dir(root: Path) -> Path | None:
    ptr = root / "LATEST"
    if not ptr.exists():
        return None
    d = root / ptr.read_text().strip()
    if not d.is_dir():
        raise CheckpointError(
            f"{ptr} names {d.name}, which does not exist; the run directory is damaged"
        )
    return d


def load_model(path: str | Path) -> PreTrainedModel:
    """Load a saved wind-tunnel model directory (safetensors only), with a clear error if broken."""
    path = Path(path)
    if not (path / "config.json").exists():
        raise CheckpointError(f"no model at {path} (config.json missing)")
    if not (path / "model.safetensors").exists():
        raise CheckpointError(f"no weights at {path} (model.safetensors missing)")
    try:
        cfg = json.loads((path / "config.json").read_text())
        # Transformers train with eager attention; keep the same kernels so logits are identical.
        kw = {"attn_implementation": "eager"} if cfg.get("model_type") == "gpt2" else {}
        return AutoModelForCausalLM.from_pretrained(path, use_safetensors=True, **kw)
    except Exception as e:  # safetensors / json errors have many types
        raise CheckpointError(f"corrupt model at {path}: {type(e).__name__}: {e}") from e


def load_checkpoint(d: Path) -> Checkpoint:
    model = load_model(d)
    try:
        opt = torch.load(d / "optimizer.pt", weights_only=True, map_location="cpu")
        state = json.loads((d / "state.json").read_text())
        log = pd.read_csv(d / "log.csv")
    except Exception as e:
        raise CheckpointError(f"corrupt checkpoint at {d}: {type(e).__name__}: {e}") from e
    return Checkpoint(model, opt, state, log)
