"""Train a wind-tunnel model: fresh batches each step, AdamW + warm-up + cosine, clipping,
periodic held-out evaluation, atomic checkpoints and exact resume.

Data for step ``s`` is drawn from the seed stream ``(seed, s)``, so a resumed run sees exactly the
batches an uninterrupted one would, and its final metrics match bit for bit.
"""

from __future__ import annotations

import json
import math
import shutil
import time
from collections.abc import Callable
from dataclasses import asdict, dataclass, field, fields
from pathlib import Path
from typing import Any

import pandas as pd
import torch
import torch.nn.functional as F
from tqdm.auto import tqdm
from transformers import PreTrainedModel

from windtunnel.architectures import ARCHS, build_model, n_params
from windtunnel.artifacts import run_manifest, write_json, write_table
from windtunnel.checkpoint import (
    CheckpointError,
    latest_checkpoint_dir,
    load_checkpoint,
    load_model,
    save_checkpoint,
    save_dense,
)
from windtunnel.evaluate import evaluate
from windtunnel.metrics import CalibrationReport
from windtunnel.task import Task, TaskConfigError, make_task, task_from_config
from windtunnel.transformer import get_preset


class RunDirError(RuntimeError):
    """The output directory holds something else (another run, unrelated files)."""


@dataclass
class TrainConfig:
    """Everything that determines a training run (the CLI and notebooks both build this)."""

    task: str = "bijection"
    task_params: dict[str, Any] = field(default_factory=dict)
    arch: str = "transformer"
    preset: str = "small"
    steps: int = 10_000
    seed: int = 0
    batch_size: int = 128
    lr: float = 3e-3
    min_lr_ratio: float = 0.01
    warmup_steps: int = 300
    weight_decay: float = 0.01
    betas: tuple[float, float] = (0.9, 0.98)
    grad_clip: float = 1.0
    eval_every: int = 1000
    eval_size: int = 1000
    final_eval_size: int = 2000
    log_every: int = 50
    ckpt_every: int = 1000
    dense_ckpt_until: int = 0
    dense_ckpt_every: int = 100
    #: Stop after this much training wall time (a final checkpoint is written). The cosine decay
    #: then follows elapsed time, so the run still ends at the floor learning rate. Time-budgeted
    #: runs are not bit-reproducible (where they stop depends on the machine).
    max_minutes: float | None = None

    def validate(self) -> Task:
        if self.steps <= 0:
            raise TaskConfigError(f"steps must be positive, got {self.steps}")
        if self.batch_size <= 0:
            raise TaskConfigError(f"batch_size must be positive, got {self.batch_size}")
        if self.arch not in ARCHS:
            raise TaskConfigError(f"unknown arch {self.arch!r}; available: {', '.join(ARCHS)}")
        if self.max_minutes is not None and self.max_minutes <= 0:
            raise TaskConfigError(f"max_minutes must be positive, got {self.max_minutes}")
        get_preset(self.preset)
        return make_task(self.task, **self.task_params)

    def to_json(self) -> dict[str, Any]:
        d = asdict(self)
        d["betas"] = list(self.betas)
        return d

    @classmethod
    def from_json(cls, d: dict[str, Any]) -> TrainConfig:
        names = {f.name for f in fields(cls)}
        d = {k: v for k, v in d.items() if k in names}
        if "betas" in d:
            d["betas"] = tuple(d["betas"])
        return cls(**d)


@dataclass
class TrainResult:
    out: Path
    steps_done: int
    stop_reason: str
    wall_s: float
    report: CalibrationReport | None
    log: pd.DataFrame


def lr_at(cfg: TrainConfig, step: int, time_frac: float | None = None) -> float:
    """Linear warm-up to ``lr``, then cosine decay to ``lr * min_lr_ratio``.

    The decay runs over ``steps``, or over the wall-time budget when ``time_frac`` (elapsed
    fraction of ``max_minutes``) is given, so a time-budgeted run also ends at the floor.
    """
    if step < cfg.warmup_steps:
        return cfg.lr * (step + 1) / cfg.warmup_steps
    span = max(1, cfg.steps - cfg.warmup_steps)
    prog = min(1.0, (step - cfg.warmup_steps) / span)
    if time_frac is not None:
        prog = max(prog, min(1.0, time_frac))
    return cfg.lr * (
        cfg.min_lr_ratio + (1 - cfg.min_lr_ratio) * 0.5 * (1 + math.cos(math.pi * prog))
    )


def task_loss(model: PreTrainedModel, task: Task, batch) -> torch.Tensor:
    """Cross-entropy (nats) over the hypothesis slice at the query positions.

    Hard targets (true hypothesis) or, for ``soft_targets`` tasks, the exact posterior.
    """
    logits = model(batch.input_ids).logits[:, batch.query_pos, task.hyp_slice]
    logp = torch.log_softmax(logits.float(), dim=-1)
    if task.soft_targets:
        return -(batch.posterior.float() * logp).sum(-1).mean()
    return F.nll_loss(logp.reshape(-1, logp.shape[-1]), batch.targets.reshape(-1))


def make_optimizer(model: torch.nn.Module, cfg: TrainConfig) -> torch.optim.AdamW:
    decay = [p for p in model.parameters() if p.ndim >= 2]
    no_decay = [p for p in model.parameters() if p.ndim < 2]
    return torch.optim.AdamW(
        [
            {"params": decay, "weight_decay": cfg.weight_decay},
            {"params": no_decay, "weight_decay": 0.0},
        ],
        lr=cfg.lr,
        betas=cfg.betas,
    )


def _prepare_run_dir(out: Path, cfg: TrainConfig) -> dict[str, Any] | None:
    """Return the existing run record if ``out`` holds this same run, else claim an empty dir."""
    rec_path = out / "run.json"
    if rec_path.exists():
        try:
            rec = json.loads(rec_path.read_text())
        except json.JSONDecodeError as e:
            raise RunDirError(f"{rec_path} is corrupt ({e}); choose another --out") from e
        if TrainConfig.from_json(rec.get("config", {})) != cfg:
            raise RunDirError(
                f"{out} holds another run (different configuration); "
                "choose a new --out or rerun with the same settings to resume it"
            )
        return rec
    if out.exists() and any(p.name != "checkpoints" for p in out.iterdir()):
        raise RunDirError(f"{out} is not empty and holds no bayesgeom run; choose another --out")
    return None


def train(
    cfg: TrainConfig,
    out: str | Path,
    progress: bool = True,
    on_step: Callable[[int], None] | None = None,
) -> TrainResult:
    """Train (or resume, or return the finished) run described by ``cfg`` in ``out``.

    ``on_step(step)`` is called after every optimiser step (tests use it to simulate a kill).
    """
    task = cfg.validate()
    out = Path(out)
    rec = _prepare_run_dir(out, cfg)
    if rec is not None and rec.get("status") == "done":
        return _finished(out, rec)
    ckroot = out / "checkpoints"

    model = build_model(task, cfg.arch, cfg.preset, cfg.seed)
    opt = make_optimizer(model, cfg)
    step, elapsed, log_rows, run_loss, run_n = 0, 0.0, [], 0.0, 0
    ck = latest_checkpoint_dir(ckroot) if rec is not None else None
    if ck is not None:
        c = load_checkpoint(ck)
        model.load_state_dict(c.model.state_dict())
        opt.load_state_dict(c.optimizer_state)
        step, elapsed = int(c.state["step"]), float(c.state["elapsed_s"])
        log_rows = c.log.to_dict("records")
        run_loss, run_n = float(c.state["run_loss"]), int(c.state["run_n"])
    manifest = run_manifest(seed=cfg.seed, dtype="float32", params=n_params(model))
    record = {
        "config": cfg.to_json(),
        "task": task.config(),
        "manifest": manifest,
        "status": "running",
        "params": n_params(model),
        "resumed_from_step": step if ck is not None else None,
    }
    write_json(out / "run.json", record)

    model.train()
    bar = tqdm(
        total=cfg.steps,
        initial=step,
        desc=f"{cfg.arch}/{cfg.task}",
        unit="step",
        disable=not progress,
        dynamic_ncols=True,
    )
    t0 = time.perf_counter() - elapsed
    stop = "steps"
    budget = None if cfg.max_minutes is None else cfg.max_minutes * 60.0

    def log_state() -> dict[str, Any]:
        return {
            "elapsed_s": time.perf_counter() - t0,
            "seed": cfg.seed,
            "run_loss": run_loss,
            "run_n": run_n,
        }

    while step < cfg.steps:
        frac = None if budget is None else (time.perf_counter() - t0) / budget
        cur_lr = lr_at(cfg, step, frac)
        for g in opt.param_groups:
            g["lr"] = cur_lr
        batch = task.sample(cfg.batch_size, (cfg.seed, step))
        loss = task_loss(model, task, batch)
        if not torch.isfinite(loss):
            raise FloatingPointError(f"loss became {loss.item()} at step {step}; lower --lr")
        opt.zero_grad(set_to_none=True)
        loss.backward()
        torch.nn.utils.clip_grad_norm_(model.parameters(), cfg.grad_clip)
        opt.step()
        step += 1
        run_loss += loss.item()
        run_n += 1
        bar.update(1)

        row: dict[str, Any] | None = None
        if step % cfg.log_every == 0 or step == cfg.steps:
            row = {
                "step": step,
                "elapsed_s": time.perf_counter() - t0,
                "train_loss": run_loss / run_n,
                "lr": cur_lr,
            }
            run_loss, run_n = 0.0, 0
        if step % cfg.eval_every == 0:
            rep = evaluate(model, task, cfg.eval_size, cfg.seed, logit_lens=False)
            row = row or {"step": step, "elapsed_s": time.perf_counter() - t0}
            row.update(
                {
                    "eval_entropy_mae_bits": rep.entropy_mae_bits,
                    "eval_entropy_mae_curve_bits": rep.entropy_mae_curve_bits,
                    "eval_kl_bits": rep.kl_bits,
                    "eval_tvd": rep.tvd,
                    "eval_accuracy": rep.accuracy,
                }
            )
            bar.set_postfix(mae_bits=f"{rep.entropy_mae_bits:.4f}")
        if row is not None:
            log_rows.append(row)
        if (
            cfg.dense_ckpt_until
            and step <= cfg.dense_ckpt_until
            and step % cfg.dense_ckpt_every == 0
        ):
            save_dense(ckroot, step, model)
        over_budget = budget is not None and time.perf_counter() - t0 >= budget
        if over_budget:
            stop = "time_budget"
        if step % cfg.ckpt_every == 0 or step == cfg.steps or over_budget:
            save_checkpoint(ckroot, step, model, opt, log_state(), _log_frame(log_rows))
        if on_step is not None:
            on_step(step)
        if over_budget:
            break
    bar.close()
    wall = time.perf_counter() - t0

    model.eval()
    report = evaluate(model, task, cfg.final_eval_size, cfg.seed, progress=progress)
    _save_final(out, model, cfg, task)
    log = _log_frame(log_rows)
    write_table(out / "metrics.parquet", log)
    summary = _summary(cfg, task, model, step, report)
    write_json(out / "eval.json", summary)
    _write_figures(out, log, report, cfg)
    record.update({"status": "done", "stop_reason": stop, "steps_done": step, "wall_s": wall})
    write_json(out / "run.json", record)
    return TrainResult(out, step, stop, wall, report, log)


def _log_frame(rows: list[dict[str, Any]]) -> pd.DataFrame:
    cols = [
        "step",
        "elapsed_s",
        "train_loss",
        "lr",
        "eval_entropy_mae_bits",
        "eval_entropy_mae_curve_bits",
        "eval_kl_bits",
        "eval_tvd",
        "eval_accuracy",
    ]
    return pd.DataFrame(rows, columns=cols)


def _save_final(out: Path, model: PreTrainedModel, cfg: TrainConfig, task: Task) -> None:
    tmp, final = out / ".tmp-model", out / "model"
    shutil.rmtree(tmp, ignore_errors=True)
    model.save_pretrained(tmp, safe_serialization=True)
    write_json(
        tmp / "windtunnel.json",
        {"task": task.config(), "arch": cfg.arch, "preset": cfg.preset, "seed": cfg.seed},
    )
    shutil.rmtree(final, ignore_errors=True)
    tmp.rename(final)


def _summary(cfg: TrainConfig, task: Task, model, steps: int, rep: CalibrationReport) -> dict:
    return {
        "task": cfg.task,
        "task_config": task.config(),
        "arch": cfg.arch,
        "preset": cfg.preset,
        "params": n_params(model),
        "steps": steps,
        "seed": cfg.seed,
        "entropy_mae_metric": "per-sample mean |H_model - H_Bayes| (bits)",
        **rep.to_dict(),
    }


def _finished(out: Path, rec: dict[str, Any]) -> TrainResult:
    summary = json.loads((out / "eval.json").read_text())
    log = pd.read_parquet(out / "metrics.parquet")
    rep = CalibrationReport(**{k: summary[k] for k in CalibrationReport.__dataclass_fields__})
    return TrainResult(
        out,
        int(rec["steps_done"]),
        rec.get("stop_reason", "steps"),
        float(rec.get("wall_s", 0.0)),
        rep,
        log,
    )


def _write_figures(out: Path, log: pd.DataFrame, rep: CalibrationReport, cfg: TrainConfig) -> None:
    from windtunnel.figures import training_figures

    training_figures(out / "figures.html", log, rep, title=f"{cfg.arch} on {cfg.task}")


@dataclass
class LoadedRun:
    """A trained model with the task it was trained on (``eval`` and analyses use this)."""

    model: PreTrainedModel
    task: Task
    arch: str
    steps: int
    path: Path


def load_run(path: str | Path) -> LoadedRun:
    """Load a run directory (its final model, or the latest checkpoint of an unfinished run)
    or a bare model directory written by training."""
    path = Path(path)
    if not path.exists():
        raise CheckpointError(f"{path} does not exist")
    if (path / "windtunnel.json").exists():
        meta = json.loads((path / "windtunnel.json").read_text())
        model = load_model(path)
        return LoadedRun(model, task_from_config(meta["task"]), meta["arch"], -1, path)
    rec_path = path / "run.json"
    if not rec_path.exists():
        raise CheckpointError(f"{path} is not a bayesgeom run (no run.json)")
    try:
        rec = json.loads(rec_path.read_text())
    except json.JSONDecodeError as e:
        raise CheckpointError(f"{rec_path} is corrupt: {e}") from e
    cfg = TrainConfig.from_json(rec["config"])
    task = task_from_config(rec["task"])
    if rec.get("status") == "done" and (path / "model").exists():
        return LoadedRun(load_model(path / "model"), task, cfg.arch, int(rec["steps_done"]), path)
    ck = latest_checkpoint_dir(path / "checkpoints")
    if ck is None:
        raise CheckpointError(f"{path} has no checkpoint yet")
    state = json.loads((ck / "state.json").read_text())
    return LoadedRun(load_model(ck), task, cfg.arch, int(state["step"]), path)
