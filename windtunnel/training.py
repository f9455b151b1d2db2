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

A run is held by one process and claimed in ``run.json`` (:class:`records.RunDir`):
its settings are the full configuration with the task's parameters spelled out
(:meth:`TrainConfig.settings`), so ``--V 20`` where 20 is the default is the same run. The
same settings resume an unfinished run from its latest checkpoint and return a finished one
(after verifying its files' checksums); other settings restart an unfinished run in place and
are refused for a finished one unless ``restart`` (``--restart``). Options are checked where
they are declared (:func:`records.check_options`) and a batch that would not fit in memory is
refused before anything is allocated, so the API and the command line give the same one-line
:class:`~windtunnel.task.TaskConfigError`.
"""

from __future__ import annotations

import math
import time
from collections.abc import Callable
from dataclasses import asdict, dataclass, fields
from pathlib import Path
from typing import Any

import pandas as pd
import torch
import torch.nn.functional as F
from transformers import PreTrainedModel

from records import (
    RunDir,
    check_options,
    json_safe,
    option,
    run_manifest,
    run_settings,
)
from windtunnel.architectures import ARCHS, build_model, check_batch_memory, n_params
from windtunnel.checkpoint import (
    latest_checkpoint_dir,
    load_checkpoint,
    save_checkpoint,
    save_dense,
)
from windtunnel.evaluate import EVAL_BATCH, NonFiniteError, evaluate
from windtunnel.metrics import CalibrationReport
from windtunnel.progress import TrainingBar
from windtunnel.runs import EXPERIMENT, log_frame, read_finished, write_finished
from windtunnel.seeds import Purpose, stream
from windtunnel.task import TaskConfigError, TokenTask, make_token_task
from windtunnel.transformer import TRANSFORMER_PRESETS, get_preset


class DivergenceError(NonFiniteError):
    """The training loss became NaN or infinite (a fault, exit status 1; a
    ``FloatingPointError`` too). The message names the step and says to lower ``--lr``."""


@dataclass
class TrainConfig:
    """Everything that determines a training run (the CLI and notebooks both build this)."""

    task: str = option("bijection", "the wind tunnel to train on")
    task_params: dict[str, Any] = option(None, "task parameters (the task's own options)",
                                         factory=dict, cli=False)
    arch: str = option("transformer", "model architecture", choices=tuple(ARCHS))
    preset: str = option("small", "model size", choices=tuple(TRANSFORMER_PRESETS))
    steps: int = option(10_000, "optimiser steps", min=1)
    seed: int = option(0, "seed of the initialisation and of every batch (< 2**64)", min=0)
    batch_size: int = option(128, "sequences per step (a fresh hypothesis each)", min=1)
    lr: float = option(3e-3, "peak learning rate", above=0)
    min_lr_ratio: float = option(0.01, "final learning rate / peak", min=0.0, max=1.0,
                                 cli=False)
    warmup_steps: int = option(300, "linear warm-up steps", min=0)
    weight_decay: float = option(0.01, "AdamW weight decay on matrices", min=0.0)
    betas: tuple[float, float] = option((0.9, 0.98), "AdamW betas (each in [0, 1))", min=0.0,
                                        cli=False)
    grad_clip: float = option(1.0, "gradient-norm clipping (the largest gradient norm)",
                              above=0)
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
                                             "training wall time", above=0)
    #: Where the model trains. Not part of the run's identity: a run moved between devices
    #: resumes, though its numbers then differ in the last bits (kernels differ).
    device: str | None = option(None, "torch device, e.g. cuda:0 (default: cpu)",
                                identity=False)
    #: Names what :func:`train`'s ``prepare`` hook does (``"zero_attn_top1"``): part of the run's
    #: identity; empty (no hook) it is left out of the settings, so older runs keep theirs.
    intervention: str = option("", "training-time intervention (needs prepare=)", cli=False)

    def validate(self) -> TokenTask:
        """The task, after checking every option (its declared type and range), the task's
        parameters and that a batch fits in memory; else a one-line ``TaskConfigError``."""
        check_options(self, TaskConfigError)
        if self.seed >= 2**64:  # torch.manual_seed's limit
            raise TaskConfigError(f"seed must be < 2**64, got {self.seed}")
        if not all(b < 1 for b in self.betas):
            raise TaskConfigError(f"betas must each be < 1, got {self.betas}")
        if not isinstance(self.task_params, dict):
            raise TaskConfigError(f"task_params must be a dict, got {self.task_params!r}")
        get_preset(self.preset)
        task = make_token_task(self.task, **self.task_params)
        eval_batch = min(EVAL_BATCH, max(self.eval_size, self.final_eval_size))
        check_batch_memory(task, self.arch, self.preset, self.batch_size, eval_batch)
        return task

    def settings(self, task: TokenTask) -> dict[str, Any]:
        """What determines the run's results: every identity field (all but ``device``), with
        ``task_params`` the task's full parameters (defaults spelled out), so equal runs have
        equal settings."""
        d = run_settings(self)  # every identity option (not the device)
        d = {k: v for k, v in d.items() if k != "intervention" or v}
        d["task_params"] = {k: v for k, v in task.config().items() if k != "task"}
        return json_safe(d)

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


def train(
    cfg: TrainConfig,
    out: str | Path,
    progress: bool = True,
    on_step: Callable[[int], None] | None = None,
    restart: bool = False,
    prepare: Callable[[PreTrainedModel], object] | None = None,
) -> TrainResult:
    """Train (or resume, or return the finished) run described by ``cfg`` in ``out``.

    ``out`` is held by this process for the whole run (another process gets a one-line
    ``RunBusyError``). The same settings resume an unfinished run bit-identically and return a
    finished one after verifying its files; other settings restart an unfinished run in place
    (one line on stderr) and are refused for a finished run unless ``restart``, which also
    starts the same settings over. ``on_step(step)`` is called after every optimiser step
    (tests use it to simulate a kill).

    ``prepare(model)`` runs once on the built (when resuming, restored) model before the first
    step; the hooks it registers (an ablation, say) stay on for every step and evaluation, the
    final ``eval.json`` included, and are not saved with the weights. It needs
    ``cfg.intervention`` naming it and vice versa (either alone: a ``TaskConfigError``).
    """
    if bool(cfg.intervention) != (prepare is not None):
        raise TaskConfigError(
            f"intervention {cfg.intervention!r} needs train(prepare=...) to apply it"
            if cfg.intervention else "train(prepare=...) needs cfg.intervention naming what "
            "it does (it becomes part of the run's identity)")
    task = cfg.validate()
    out = Path(out)
    settings = cfg.settings(task)
    with RunDir(out, EXPERIMENT, settings, restart=restart,
                record={"config": settings, "task": task.config()}) as rd:
        if rd.done:
            return _finished(out, rd.previous or {})
        return _train(cfg, task, rd, progress, on_step, prepare)


def _train(cfg: TrainConfig, task: TokenTask, rd: RunDir, progress: bool,
           on_step: Callable[[int], None] | None,
           prepare: Callable[[PreTrainedModel], object] | None = None) -> TrainResult:
    out = rd.out
    ckroot = out / "checkpoints"
    device = torch.device(cfg.device or "cpu")
    model = build_model(task, cfg.arch, cfg.preset, cfg.seed).to(device)
    opt = make_optimizer(model, cfg)
    step, elapsed, log_rows, run_loss, run_n = 0, 0.0, [], 0.0, 0
    ck = latest_checkpoint_dir(ckroot) if rd.previous is not None else None
    if ck is not None:
        c = load_checkpoint(ck)
        model.load_state_dict(c.model.state_dict())
        opt.load_state_dict(c.optimizer_state)
        step, elapsed = int(c.state["step"]), float(c.state["elapsed_s"])
        log_rows = c.log.to_dict("records")
        run_loss, run_n = float(c.state["run_loss"]), int(c.state["run_n"])
    if prepare is not None:
        prepare(model)  # its hooks stay on the modules for the whole run
    manifest = run_manifest(seed=cfg.seed, dtype="float32", params=n_params(model))
    rd.update(manifest=manifest, params=n_params(model),
              resumed_from_step=step if ck is not None else None)

    model.train()
    t0 = time.perf_counter() - elapsed
    stop = "steps"
    budget = None if cfg.max_minutes is None else cfg.max_minutes * 60.0
    bar = TrainingBar(cfg.steps, budget, step, elapsed, f"{cfg.arch}/{cfg.task}", progress)

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
        batch = task.sample(cfg.batch_size, stream(cfg.seed, Purpose.TRAIN, step)).to(device)
        loss = task_loss(model, task, batch)
        if not torch.isfinite(loss):
            raise DivergenceError(
                f"the training loss became {loss.item()} at step {step + 1}; lower --lr (now "
                f"{cfg.lr:g}) and rerun: the unfinished run in {out} restarts in place")
        opt.zero_grad(set_to_none=True)
        loss.backward()
        torch.nn.utils.clip_grad_norm_(model.parameters(), cfg.grad_clip)
        opt.step()
        step += 1
        run_loss += loss.item()
        run_n += 1
        bar.advance(step, time.perf_counter() - t0)

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
            bar.postfix(mae_bits=f"{rep.entropy_mae_bits:.4f}")
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
            save_checkpoint(ckroot, step, model, opt, log_state(), log_frame(log_rows))
        if on_step is not None:
            on_step(step)
        if over_budget:
            break
    bar.close()
    wall = time.perf_counter() - t0

    model.eval()
    report = evaluate(model, task, cfg.final_eval_size, cfg.seed, progress=progress)
    log = write_finished(out, model, task, cfg.arch, cfg.preset, cfg.seed, step, report, log_rows)
    rd.finish(stop_reason=stop, steps_done=step, wall_s=wall)
    return TrainResult(out, step, stop, wall, report, log, n_params(model))


def _finished(out: Path, rec: dict[str, Any]) -> TrainResult:
    """The finished run in ``out``, its model, metrics and log verified first."""
    summary, log = read_finished(out)
    rep = CalibrationReport.from_dict(summary)
    return TrainResult(out, int(rec["steps_done"]), rec.get("stop_reason", "steps"),
                       float(rec.get("wall_s", 0.0)), rep, log, int(summary["params"]))
