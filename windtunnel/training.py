"""Train a wind-tunnel model: fresh batches each step, AdamW + warm-up + cosine, clipping,
periodic held-out evaluation, atomic checkpoints and exact resume.

Every draw comes from a named stream of the run seed (:mod:`windtunnel.seeds`): the batch of
step ``s`` from ``stream(seed, TRAIN, s)`` -- the generator of
``SeedSequence(seed, spawn_key=(tag(TRAIN), s))`` -- and held-out evaluation batch ``i`` from
``stream(seed, EVAL, i)``. Streams of different purposes or indices are disjoint by construction
(no plain-tuple aliasing such as ``default_rng(s)`` = ``default_rng((s, 0))``), so evaluation
never replays a training batch; and a step's batch depends on the run seed and the step alone, so
a resumed run sees exactly the batches an uninterrupted one would, and its final metrics match
bit for bit. A run stops at ``steps``, at ``max_minutes`` of training, or (``plateau_window``)
when its held-out metric stops improving (:mod:`windtunnel.plateau_rule`, decided from the
logged evaluations alone, so a resumed run stops where an uninterrupted one would); the reason
is recorded as ``stop_reason`` (``steps``, ``time_budget``, ``plateau``) in ``run.json``, and
the device it (last) trained on as ``device``, as the machine names it (``cuda:3`` for
``cuda:0`` under ``CUDA_VISIBLE_DEVICES=3``: :func:`records.physical_device`). Model
initialisation uses torch's generator (``torch.manual_seed(seed)``).

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

import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pandas as pd
import torch
import torch.nn.functional as F
from transformers import PreTrainedModel

from ..records import RunDir, expect_config, physical_device, run_manifest
from .arch_registry import arch_spec
from .arch_spec import ArchSpec
from .architectures import build_model, n_params
from .checkpoint import latest_checkpoint_dir, load_checkpoint, save_checkpoint, save_dense
from .evaluate import (
    EVAL_BATCH,
    UNTIMED_BATCHES,
    NonFiniteError,
    batch_seconds,
    check_eval_time,
    evaluate,
)
from .metrics import CalibrationReport
from .plateau_rule import plateaued
from .progress import TrainingBar
from .runs import EXPERIMENT, log_frame, read_finished, write_finished
from .seeds import Purpose, stream
from .task import TokenTask
from .train_config import TrainConfig, TrainingMonitor, check_hooks, lr_at

__all__ = ["DivergenceError", "TrainConfig", "TrainResult", "TrainingMonitor", "lr_at",
           "make_optimizer", "task_loss", "train"]


class DivergenceError(NonFiniteError):
    """The training loss became NaN or infinite (a fault, exit status 1; a
    ``FloatingPointError`` too). The message names the step and says to lower ``--lr``."""


@dataclass
class TrainResult:
    out: Path
    steps_done: int
    stop_reason: str
    wall_s: float
    report: CalibrationReport | None
    log: pd.DataFrame
    params: int


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


def check_eval_budget(cfg: TrainConfig, task: TokenTask, spec: ArchSpec) -> None:
    """Before the run is claimed: refuse evaluations that would not end (``--eval-size`` at
    every ``--eval-every`` steps, ``--final-eval-size`` once) on the time one batch of a fresh
    model of ``spec`` (``cfg.arch``'s) takes here (:func:`~windtunnel.evaluate.check_eval_time`).
    Runs whose evaluations are at most :data:`~windtunnel.evaluate.UNTIMED_BATCHES` batches are
    not timed."""
    periodic = -(-cfg.eval_size // EVAL_BATCH) * (cfg.steps // cfg.eval_every)
    final = -(-cfg.final_eval_size // EVAL_BATCH)
    if max(-(-cfg.eval_size // EVAL_BATCH), final) <= UNTIMED_BATCHES:
        return
    model = build_model(task, spec, cfg.preset, cfg.seed).to(cfg.device or "cpu")
    check_eval_time(batch_seconds(model, task, logit_lens=False), periodic,
                    f"evaluating {cfg.eval_size:,} sequences every {cfg.eval_every} steps",
                    "--eval-size or raise --eval-every")
    check_eval_time(batch_seconds(model, task, logit_lens=True), final,
                    f"the final evaluation of {cfg.final_eval_size:,} sequences",
                    "--final-eval-size")


def train(
    cfg: TrainConfig,
    out: str | Path,
    progress: bool = True,
    on_step: Callable[[int], None] | None = None,
    restart: bool = False,
    prepare: Callable[[PreTrainedModel], object] | None = None,
    monitor: TrainingMonitor | None = None,
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

    ``monitor`` (a :class:`~windtunnel.train_config.TrainingMonitor`) is started after
    ``prepare`` and called after the optimiser step of every ``cfg.monitor_every``-th step; its
    columns join that step's row of the metrics log (checkpointed with it, so a resumed run
    keeps them), and it writes its own outputs into ``out`` before the run is marked done. It
    needs ``cfg.monitor_every > 0`` and vice versa, and ``cfg.ckpt_every`` a multiple of it.
    """
    expect_config(cfg, TrainConfig, "train")
    task = cfg.validate()
    spec = arch_spec(cfg.arch)  # resolved once for the run
    check_hooks(cfg, prepare, monitor)
    if monitor is not None:
        monitor.check(cfg)
    check_eval_budget(cfg, task, spec)
    out = Path(out)
    settings = cfg.settings(task)
    with RunDir(out, EXPERIMENT, settings, restart=restart,
                record={"config": settings, "task": task.config()}) as rd:
        if rd.done:
            return _finished(out, rd.previous or {})
        return _train(cfg, task, spec, rd, progress, on_step, prepare, monitor)


def _train(cfg: TrainConfig, task: TokenTask, spec: ArchSpec, rd: RunDir, progress: bool,
           on_step: Callable[[int], None] | None,
           prepare: Callable[[PreTrainedModel], object] | None = None,
           monitor: TrainingMonitor | None = None) -> TrainResult:
    out = rd.out
    ckroot = out / "checkpoints"
    device = torch.device(cfg.device or "cpu")
    model = build_model(task, spec, cfg.preset, cfg.seed).to(device)
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
    if monitor is not None:
        monitor.start(model, task, cfg.seed, step)
    manifest = run_manifest(seed=cfg.seed, dtype="float32", params=n_params(model))
    rd.update(manifest=manifest, params=n_params(model), device=physical_device(cfg.device),
              resumed_from_step=step if ck is not None else None)

    model.train()
    t0 = time.perf_counter() - elapsed
    stop = "steps"
    metric = f"eval_{cfg.plateau_metric}"  # the column the plateau rule reads
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
        if monitor is not None and step % cfg.monitor_every == 0:
            row = row or {"step": step, "elapsed_s": time.perf_counter() - t0}
            row.setdefault("lr", cur_lr)  # the interval's closing rate, for the monitor's use
            row.update(monitor(model, step))
        if row is not None:
            log_rows.append(row)
        if cfg.plateau_window and step % cfg.eval_every == 0 and step > cfg.warmup_steps and \
                plateaued([r[metric] for r in log_rows if metric in r], cfg.plateau_window,
                          cfg.plateau_tol):
            stop = "plateau"
        if (
            cfg.dense_ckpt_until
            and step <= cfg.dense_ckpt_until
            and step % cfg.dense_ckpt_every == 0
        ):
            save_dense(ckroot, step, model)
        over_budget = budget is not None and time.perf_counter() - t0 >= budget
        if over_budget and stop != "plateau":
            stop = "time_budget"
        ending = over_budget or stop == "plateau"
        if step % cfg.ckpt_every == 0 or step == cfg.steps or ending:
            save_checkpoint(ckroot, step, model, opt, log_state(), log_frame(log_rows))
        if on_step is not None:
            on_step(step)
        if ending:
            break
    bar.close()
    wall = time.perf_counter() - t0

    model.eval()
    report = evaluate(model, task, cfg.final_eval_size, cfg.seed, progress=progress)
    log = write_finished(out, model, task, cfg.arch, cfg.preset, cfg.seed, step, report, log_rows)
    if monitor is not None:
        monitor.finish(out, log)
    rd.finish(stop_reason=stop, steps_done=step, wall_s=wall)
    return TrainResult(out, step, stop, wall, report, log, n_params(model))


def _finished(out: Path, rec: dict[str, Any]) -> TrainResult:
    """The finished run in ``out``, its model, metrics and log verified first."""
    summary, log = read_finished(out)
    rep = CalibrationReport.from_dict(summary)
    return TrainResult(out, int(rec["steps_done"]), rec.get("stop_reason", "steps"),
                       float(rec.get("wall_s", 0.0)), rep, log, int(summary["params"]))
