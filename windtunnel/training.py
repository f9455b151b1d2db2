"""Train a wind-tunnel model: fresh batches each step, AdamW + warm-up + cosine, clipping,
periodic held-out evaluation, atomic checkpoints and exact resume.

Every draw comes from a named stream of the run seed (:mod:`windtunnel.seeds`): the batch of
step ``s`` from ``stream(seed, TRAIN, s)`` -- the generator of
``SeedSequence(seed, spawn_key=(tag(TRAIN), s))`` -- and held-out evaluation batch ``i`` from
``stream(seed, EVAL, i)``. Streams of different purposes or indices are disjoint by construction
(no plain-tuple aliasing such as ``default_rng(s)`` = ``default_rng((s, 0))``), so evaluation
never replays a training batch; and a step's batch depends on the run seed and the step alone, so
a resumed run sees exactly the batches an uninterrupted one would, and its final metrics match
bit for bit. Model initialisation uses torch's generator (``torch.manual_seed(seed)``).
"""

from __future__ import annotations

import json
import math
import time
from collections.abc import Callable
from dataclasses import asdict, dataclass, fields
from pathlib import Path
from typing import Any

import pandas as pd
import torch
import torch.nn.functional as F
from tqdm.auto import tqdm
from transformers import PreTrainedModel

from records import (
    check_options,
    option,
    read_json,
    run_manifest,
    write_json,
    write_table,
)
from windtunnel.architectures import ARCHS, build_model, n_params
from windtunnel.checkpoint import (
    latest_checkpoint_dir,
    load_checkpoint,
    save_checkpoint,
    save_dense,
)
from windtunnel.evaluate import evaluate
from windtunnel.metrics import CalibrationReport
from windtunnel.runs import RUN_RECORD, RunDirError, save_final_model
from windtunnel.seeds import Purpose, stream
from windtunnel.task import TaskConfigError, TokenTask, make_token_task
from windtunnel.transformer import TRANSFORMER_PRESETS, get_preset


@dataclass
class TrainConfig:
    """Everything that determines a training run (the CLI and notebooks both build this)."""

    task: str = option("bijection", "the wind tunnel to train on")
    task_params: dict[str, Any] = option(None, "task parameters (the task's own options)",
                                         factory=dict, cli=False)
    arch: str = option("transformer", "model architecture", choices=tuple(ARCHS))
    preset: str = option("small", "model size", choices=tuple(TRANSFORMER_PRESETS))
    steps: int = option(10_000, "optimiser steps", min=1)
    seed: int = option(0, "seed of the initialisation and of every batch", min=0)
    batch_size: int = option(128, "sequences per step (a fresh hypothesis each)", min=1)
    lr: float = option(3e-3, "peak learning rate")
    min_lr_ratio: float = option(0.01, "final learning rate / peak", min=0.0, max=1.0,
                                 cli=False)
    warmup_steps: int = option(300, "linear warm-up steps", min=0)
    weight_decay: float = option(0.01, "AdamW weight decay on matrices", min=0.0)
    betas: tuple[float, float] = option((0.9, 0.98), "AdamW betas", cli=False)
    grad_clip: float = option(1.0, "gradient-norm clipping")
    eval_every: int = option(1000, "held-out evaluation every N steps", min=1)
    eval_size: int = option(1000, "held-out sequences per evaluation", min=1)
    final_eval_size: int = option(2000, "held-out sequences of the final evaluation", min=1,
                                  cli=False)
    log_every: int = option(50, "training-loss log interval (steps)", min=1, cli=False)
    ckpt_every: int = option(1000, "checkpoint every N steps", min=1)
    dense_ckpt_until: int = option(0, "also keep model-only checkpoints every "
                                      "--dense-ckpt-every steps until here", min=0)
    dense_ckpt_every: int = option(100, "interval of the dense early checkpoints", min=1)
    #: Stop after this much training wall time (a final checkpoint is written). The cosine decay
    #: then follows elapsed time, so the run still ends at the floor learning rate. Time-budgeted
    #: runs are not bit-reproducible (where they stop depends on the machine).
    max_minutes: float | None = option(None, "stop (with a final checkpoint) after this much "
                                             "training wall time", min=1e-6)

    def validate(self) -> TokenTask:
        check_options(self, TaskConfigError)
        get_preset(self.preset)
        return make_token_task(self.task, **self.task_params)

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
    params: int


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


def task_loss(model: PreTrainedModel, task: TokenTask, batch) -> torch.Tensor:
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
    rec_path = out / RUN_RECORD
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
    write_json(out / RUN_RECORD, record)

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
        batch = task.sample(cfg.batch_size, stream(cfg.seed, Purpose.TRAIN, step))
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
    save_final_model(out, model, task, cfg.arch, cfg.preset, cfg.seed)
    log = _log_frame(log_rows)
    write_table(out / "metrics.parquet", log)
    summary = _summary(cfg, task, model, step, report)
    write_json(out / "eval.json", summary)
    _write_figures(out, log, report, cfg)
    record.update({"status": "done", "stop_reason": stop, "steps_done": step, "wall_s": wall})
    write_json(out / RUN_RECORD, record)
    return TrainResult(out, step, stop, wall, report, log, n_params(model))


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


def _summary(cfg: TrainConfig, task: TokenTask, model, steps: int, rep: CalibrationReport) -> dict:
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
    summary = read_json(out / "eval.json")
    log = pd.read_parquet(out / "metrics.parquet")
    rep = CalibrationReport.from_dict(summary)
    return TrainResult(out, int(rec["steps_done"]), rec.get("stop_reason", "steps"),
                       float(rec.get("wall_s", 0.0)), rep, log, int(summary["params"]))


def _write_figures(out: Path, log: pd.DataFrame, rep: CalibrationReport, cfg: TrainConfig) -> None:
    from windtunnel.figures import training_figures

    training_figures(out / "figures.html", log, rep, title=f"{cfg.arch} on {cfg.task}")
