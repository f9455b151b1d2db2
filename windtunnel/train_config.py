"""What determines a wind-tunnel training run: :class:`TrainConfig` (the options, their checks
and the run's identity), the learning-rate schedule :func:`lr_at`, and the contracts of the two
hooks :func:`windtunnel.training.train` takes from the layers above it (windtunnel imports none
of them): ``prepare`` (an intervention, named by ``cfg.intervention``) and a
:class:`TrainingMonitor` (called every ``cfg.monitor_every`` steps).
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import asdict, dataclass, fields
from pathlib import Path
from typing import TYPE_CHECKING, Any, Protocol

from ..records import check_options, json_safe, option, run_settings, seed_option
from ..records.budget import SEQUENCES, STEPS
from .arch_registry import ARCH_NAMES
from .names import PRESET_NAMES, TaskConfigError
from .plateau_rule import PLATEAU_METRICS, unreachable

if TYPE_CHECKING:  # the config imports no torch: the command line checks it first
    import pandas as pd
    from transformers import PreTrainedModel

    from .task import TokenTask


@dataclass
class TrainConfig:
    """Everything that determines a training run (the CLI and notebooks both build this)."""

    task: str = option("bijection", "the wind tunnel to train on")
    task_params: dict[str, Any] = option(None, "task parameters (the task's own options)",
                                         factory=dict, cli=False)
    arch: str = option("transformer", "model architecture", choices=ARCH_NAMES)
    preset: str = option("small", "model size", choices=PRESET_NAMES)
    steps: int = option(10_000, "optimiser steps", min=1, cost=STEPS)
    seed: int = seed_option(0, "seed of the initialisation and of every batch")
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
    eval_size: int = option(1000, "held-out sequences per evaluation", min=1,
                           cost=SEQUENCES)
    final_eval_size: int = option(2000, "held-out sequences of the final evaluation", min=1,
                                  cli=False)
    log_every: int = option(50, "training-loss log interval (steps)", min=1, cli=False)
    ckpt_every: int = option(1000, "checkpoint every N steps", min=1)
    dense_ckpt_until: int = option(0, "also keep model-only checkpoints every "
                                      "--dense-ckpt-every steps until here", min=0)
    dense_ckpt_every: int = option(100, "interval of the dense early checkpoints", min=1,
                                   needs="dense_ckpt_until")
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
    #: Call :func:`train`'s ``monitor`` every N steps and log what it returns (0: no monitor).
    #: Part of the run's identity; 0 is left out of the settings, so older runs keep theirs.
    monitor_every: int = option(0, "log the training-dynamics monitor every N steps "
                                   "(0: off; a divisor of --ckpt-every)", min=0)
    #: Stop once the last N held-out evaluations (every ``eval_every`` steps) improved
    #: ``plateau_metric`` by no more than ``plateau_tol`` of its best before them
    #: (:mod:`windtunnel.plateau_rule`); ``steps`` and ``max_minutes`` stay the caps. The
    #: learning rate still follows the cap's schedule. 0 (off) is left out of the settings.
    plateau_window: int = option(0, "stop when the last N held-out evaluations improved by at "
                                    "most --plateau-tol (0: off; --steps stays the cap)", min=0)
    plateau_tol: float = option(0.02, "the plateau rule's tolerance: an improvement smaller "
                                      "than this fraction of the best so far does not count",
                                min=0.0, max=0.99, needs="plateau_window")
    plateau_metric: str = option("kl_bits", "the held-out metric the plateau rule watches",
                                 choices=PLATEAU_METRICS, needs="plateau_window")

    def validate(self) -> TokenTask:
        """The task, after checking every option (its declared type and range), the task's
        parameters and that a batch fits in memory; else a one-line ``TaskConfigError``.
        The options are checked before the task and model modules (torch) are imported."""
        check_options(self, TaskConfigError)
        if not all(b < 1 for b in self.betas):
            raise TaskConfigError(f"betas must each be < 1, got {self.betas}")
        if not isinstance(self.task_params, dict):
            raise TaskConfigError(f"task_params must be a dict, got {self.task_params!r}")
        never = unreachable(self.plateau_window, self.eval_every, self.warmup_steps, self.steps)
        if never is not None:
            raise TaskConfigError(never)
        from .architectures import check_batch_memory
        from .evaluate import EVAL_BATCH
        from .task_registry import make_token_task
        from .transformer import get_preset

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
        d = {k: v for k, v in d.items() if k not in ("intervention", "monitor_every") or v}
        if not self.plateau_window:  # off: older runs keep their settings
            d = {k: v for k, v in d.items() if not k.startswith("plateau_")}
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



class TrainingMonitor(Protocol):
    """What :func:`windtunnel.training.train` calls when ``cfg.monitor_every > 0``.

    A monitor reads the live model and must not change training: it draws from no random
    stream that training uses (nor the global ones), leaves the parameters, their ``.grad``
    and the model's train/eval mode as it found them. Its numbers must depend on the model's
    weights at the step alone (plus its own fixed settings, which the caller keeps the same
    across a resume), so that a resumed run logs what an uninterrupted one would.
    """

    def check(self, cfg: TrainConfig) -> None:
        """Refuse ``cfg`` (a one-line ``TaskConfigError``) before the run folder is touched."""

    def start(self, model: PreTrainedModel, task: TokenTask, seed: int, step: int) -> None:
        """Called once on the built (when resuming, restored) model before the first step;
        ``step`` is the step it starts from (0, or the checkpoint's)."""

    def __call__(self, model: PreTrainedModel, step: int) -> dict[str, float]:
        """Called after the optimiser step whenever ``step % cfg.monitor_every == 0``; the
        columns it returns are merged into that step's row of the metrics log."""
        ...

    def finish(self, out: Path, log: pd.DataFrame) -> None:
        """Called with the finished run's folder and its metrics log (all rows, the monitor's
        columns included), before the run is marked done: write the monitor's outputs."""


def check_hooks(cfg: TrainConfig, prepare: Callable[[PreTrainedModel], object] | None,
                monitor: TrainingMonitor | None) -> None:
    """A hook needs the option naming it and vice versa, and a resumable monitor needs
    checkpoints at its own steps; else a one-line ``TaskConfigError``."""
    if bool(cfg.intervention) != (prepare is not None):
        raise TaskConfigError(
            f"intervention {cfg.intervention!r} needs train(prepare=...) to apply it"
            if cfg.intervention else "train(prepare=...) needs cfg.intervention naming what "
            "it does (it becomes part of the run's identity)")
    if bool(cfg.monitor_every) != (monitor is not None):
        raise TaskConfigError(
            f"monitor_every {cfg.monitor_every} needs train(monitor=...) to call"
            if cfg.monitor_every else "train(monitor=...) needs cfg.monitor_every > 0 (how "
            "often to call it; it becomes part of the run's identity)")
    if cfg.monitor_every and cfg.ckpt_every % cfg.monitor_every:
        raise TaskConfigError(
            f"--ckpt-every ({cfg.ckpt_every}) must be a multiple of --monitor-every "
            f"({cfg.monitor_every}), so a resumed run's monitor starts where an "
            "uninterrupted one would")
