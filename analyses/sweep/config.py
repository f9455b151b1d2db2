"""The options of ``bayesgeom sweep``: :class:`SweepConfig`, each declared once, and its
``check()``, which the command line runs before the run module is imported: this module imports
no torch, transformers, pandas, scipy or plotly, so a bad option or ``--out`` is refused at
once, with nothing loaded (``tests/analyses/cli/test_validate_first.py``)."""

from __future__ import annotations

import argparse
import json
import os
from dataclasses import dataclass
from typing import Any

from ...records import option, same_option, seed_option
from ...records.budget import RUN_LIST
from ...windtunnel.arch_registry import ARCH_NAMES
from ...windtunnel.names import PRESET_NAMES, TEXT_TASK_NAMES, TOKEN_TASK_NAMES
from ...windtunnel.plateau_rule import unreachable
from ...windtunnel.task_configs import task_params_problem
from ...windtunnel.train_config import TrainConfig
from ..kit.devices import normal
from ..kit.errors import ExperimentError
from ..kit.run_options import RunOptions
from ..kit.shard_options import devices_problem
from ..kit.slurm_options import resource_option, sbatch_problem
from .devices import default_devices

BACKENDS = ("local", "submitit")
#: what the submitit options need (:func:`records.option`'s ``needs``): the local pool would
#: ignore them
SUBMITIT = "backend=submitit"


def json_object(text: str, value: type = dict, example: str = '{"hmm": {"K": 20}}',
                ) -> dict[str, Any]:
    """A JSON object of ``value`` entries from the command line (``--task-params``)."""
    try:
        obj = json.loads(text)
    except json.JSONDecodeError as e:
        raise argparse.ArgumentTypeError(f"not valid JSON ({e.msg}): {text!r}") from None
    if not isinstance(obj, dict) or not all(isinstance(v, value) for v in obj.values()):
        raise argparse.ArgumentTypeError(f"expected an object of {value.__name__}s such as "
                                         f"{example}, got {text!r}")
    return obj


def json_lists(text: str) -> dict[str, Any]:
    """A JSON object of lists from the command line (``--eval-params``)."""
    return json_object(text, list, '{"hmm": [{"K": 30}, {"K": 50}]}')


@dataclass
class SweepConfig(RunOptions, experiment="sweep"):
    """The grid and the training settings every cell shares."""

    tasks: tuple[str, ...] = option(("bijection",), "token tasks (bijection, hmm, ...)",
                                    unique=True)
    archs: tuple[str, ...] = option(("transformer",), "architectures (transformer, "
                                    "mlp-position, mlp-flat, ...)", unique=True)
    presets: tuple[str, ...] = option(("small",), "model sizes", unique=True)
    seeds: tuple[int, ...] = seed_option((0, 1, 2), "seeds (one run each)", unique=True,
                                         cost=RUN_LIST)
    steps: int = same_option(TrainConfig, "steps", 2000)
    max_minutes: float | None = same_option(TrainConfig, "max_minutes")
    batch_size: int = same_option(TrainConfig, "batch_size")
    lr: float = same_option(TrainConfig, "lr")
    eval_every: int = same_option(TrainConfig, "eval_every")
    eval_size: int = same_option(TrainConfig, "eval_size")
    plateau_window: int = same_option(TrainConfig, "plateau_window")
    plateau_tol: float = same_option(TrainConfig, "plateau_tol")
    plateau_metric: str = same_option(TrainConfig, "plateau_metric")
    device: str | None = same_option(TrainConfig, "device")
    task_params: dict[str, dict[str, Any]] = option(
        None, "per task, its parameters as JSON, e.g. '{\"hmm\": {\"K\": 20}}'",
        factory=dict, parse=json_object, metavar="JSON")
    eval_params: dict[str, list[dict[str, Any]]] = option(
        None, "per task, extra held-out evaluations of each trained cell at changed task "
        "parameters, as JSON, e.g. '{\"hmm\": [{\"K\": 30}, {\"K\": 50}]}'",
        factory=dict, parse=json_lists, metavar="JSON")
    backend: str = option("local", "where cells run: a local process pool, or submitit "
                          "(Slurm job arrays; local subprocesses without Slurm)",
                          choices=BACKENDS, identity=False)
    workers: int | None = option(None, "cells run at once (default: one per device of "
                                 "--devices, else 1; submitit: the array's parallelism)",
                                 min=1, identity=False)
    devices: tuple[str, ...] | None = option(
        None, "this machine's devices, worker i pinned to the i-th, one cell per device at a "
        "time: cuda:0,cuda:1 or 0,1 (cpu,cpu: two CPU workers) (default: with --device cuda, "
        "each GPU of CUDA_VISIBLE_DEVICES; else --device)", identity=False)
    # submitit's parameters (Slurm's #SBATCH lines): how a job runs, never what it computes
    gpus_per_node: int | None = resource_option("gpus_per_node", SUBMITIT)
    cpus_per_task: int | None = resource_option("cpus_per_task", SUBMITIT)
    mem_gb: float | None = resource_option("mem_gb", SUBMITIT)
    timeout_min: int = resource_option("timeout_min", SUBMITIT)
    slurm_partition: str | None = resource_option("slurm_partition", SUBMITIT)
    slurm_account: str | None = resource_option("slurm_account", SUBMITIT)
    slurm_additional_parameters: dict[str, Any] = resource_option(
        "slurm_additional_parameters", SUBMITIT)

    def check(self) -> None:
        super().check()
        for name, values, known in (("tasks", self.tasks, (*TOKEN_TASK_NAMES, *TEXT_TASK_NAMES)),
                                    ("archs", self.archs, ARCH_NAMES),
                                    ("presets", self.presets, PRESET_NAMES)):
            if not values:
                raise ExperimentError(f"give at least one of {name}")
            bad = [v for v in values if v not in known]
            if bad:
                raise ExperimentError(f"unknown {name} {', '.join(bad)}; available: "
                                 f"{', '.join(sorted(known))}")
        text = [t for t in self.tasks if t in TEXT_TASK_NAMES]
        if text:
            raise ExperimentError(f"{', '.join(text)} is a text task; a sweep trains token tasks")
        if not self.seeds:
            raise ExperimentError("give at least one seed")
        never = unreachable(self.plateau_window, self.eval_every, self.warmup_steps, self.steps)
        if never is not None:
            raise ExperimentError(never)
        for name in ("task_params", "eval_params"):
            extra = sorted(set(getattr(self, name)) - set(self.tasks))
            if extra:
                raise ExperimentError(f"{name} for {', '.join(extra)}, which is not in tasks")
        for name, kind, example in (("task_params", dict, '{"K": 20}'),
                                    ("eval_params", list, '[{"K": 30}, {"K": 50}]')):
            for task, value in getattr(self, name).items():  # a config file's shapes too
                if not isinstance(value, kind):
                    raise ExperimentError(f"{name} for {task} must be like {example}, got "
                                          f"{json.dumps(value)}")
        for task in self.tasks:  # names and declared ranges, torch-free
            base = self.task_params.get(task, {})
            overrides = self.eval_params.get(task, [])
            if not isinstance(overrides, list) or not all(isinstance(o, dict) for o in overrides):
                continue  # check_overrides says what shape it must have
            for params in (base, *({**base, **o} for o in overrides)):
                problem = task_params_problem(task, params)
                if problem is not None:
                    where = "task_params" if params is base else "eval_params"
                    raise ExperimentError(f"{where} {task}: {problem}")
        self.check_workers()
        if self.eval_params:  # each override builds its task (torch): after the light checks
            from .evals import check_overrides
        for task, overrides in self.eval_params.items():
            bad = check_overrides(task, self.task_params.get(task, {}), overrides)
            if bad:
                raise ExperimentError(bad[0])

    def check_workers(self) -> None:
        """``--devices``, ``--workers`` and the #SBATCH options, torch-free: each device named
        (a GPU once), no more workers than devices, JSON of the right shape."""
        problem = sbatch_problem(self.slurm_additional_parameters)
        if problem is not None:
            raise ExperimentError(problem)
        problem = devices_problem(self.devices or ())
        if problem is not None:
            raise ExperimentError(problem)
        gpus = [normal(d) or d for d in self.devices or () if normal(d) != "cpu"]
        twice = sorted({g for g in gpus if gpus.count(g) > 1})
        if twice:
            raise ExperimentError(f"--devices names {', '.join(twice)} more than "
                                  "once; a GPU trains one cell at a time")
        if self.devices is not None and self.device is not None and \
                (self.device.strip() == "cpu") != all(normal(d) == "cpu" for d in self.devices):
            raise ExperimentError(f"--device {self.device} and --devices "
                                  f"{','.join(self.devices)} disagree; --devices names each "
                                  "worker's device, drop --device")
        devices = self.slot_devices()  # on submitit --workers is the array's parallelism
        if self.backend == "local" and devices is not None and self.workers is not None \
                and self.workers > len(devices):
            raise ExperimentError(f"--workers {self.workers} is more than the {len(devices)} "
                                  f"device(s) its workers are pinned to ({','.join(devices)}): "
                                  "one cell per device at a time; give fewer workers or more "
                                  "--devices")

    def slot_devices(self) -> tuple[str, ...] | None:
        """The devices the local workers are pinned to, one each (``--devices``, or each GPU
        of ``CUDA_VISIBLE_DEVICES`` for ``--device cuda``); None: every worker on
        ``--device``, unpinned."""
        return default_devices(self.devices, self.device, os.environ)

    def worker_count(self) -> int:
        """Cells run at once: ``--workers``, else one per device (:meth:`slot_devices`), else
        1."""
        devices = self.slot_devices()
        return self.workers or (len(devices) if devices else 1)

    @property
    def warmup_steps(self) -> int:
        """The warm-up every cell trains with (a tenth of ``steps``, at most 300)."""
        return min(300, self.steps // 10)

    def extra_metrics(self) -> list[str]:
        """The columns the extra evaluations add (``entropy_mae_bits@K=50`` ...)."""
        from .evals import metric_names

        return list(dict.fromkeys(n for t in self.tasks
                                  for n in metric_names(self.eval_params.get(t, []))))
