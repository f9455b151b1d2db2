"""The options of a data-parallel run, declared once: ``--workers`` (worker processes, each
with its own copy of the model, each running a contiguous shard of the prompts), ``--devices``
(a comma-separated list of devices, one per worker, named as :mod:`analyses.kit.devices`
says) and ``--launcher submitit`` (the shards as a submitit job array instead, with the
Slurm requests of :mod:`analyses.kit.slurm_options`). Checked before anything heavy is
imported: this module imports no torch.

Example:
    >>> device_list("cuda:0, 1")
    ('cuda:0', 'cuda:1')
    >>> try:
    ...     check_workers(2, ("cuda:0",), 75, "prompts per set", ValueError)
    ... except ValueError as e:
    ...     print(str(e)[:48])
    --devices names 1 device for 2 workers; give one
"""

from __future__ import annotations

import argparse
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from ...records import option
from .devices import device_problem, normal
from .slurm_options import resource_option, sbatch_problem

LAUNCHERS = ("local", "submitit")
#: what the Slurm requests need (:func:`records.option`'s ``needs``)
SUBMITTED = "launcher=submitit"


def devices_problem(devices: object) -> str | None:
    """Why ``devices`` is not a list of worker devices (:mod:`analyses.kit.devices`), or None."""
    if not isinstance(devices, tuple | list):
        return f"--devices must be a comma-separated list such as cuda:0,cuda:1, got {devices!r}"
    for d in devices:
        if not isinstance(d, str):
            return f"--devices: {d!r} is not a device name; write e.g. cuda:0,cuda:1 (or cpu)"
        why = device_problem(d)
        if why is not None:
            return why
    return None


def device_list(text: str) -> tuple[str, ...]:
    """``"cuda:0, 1"`` -> ``("cuda:0", "cuda:1")``; an empty element or a name that is no
    device (:func:`analyses.kit.devices.normal`) is refused."""
    devices = tuple(d.strip() for d in text.split(","))
    if any(not d for d in devices):
        raise argparse.ArgumentTypeError(f"--devices {text!r} has an empty element; write e.g. "
                                         "cuda:0,cuda:1")
    why = devices_problem(devices)
    if why is not None:
        raise argparse.ArgumentTypeError(why.removeprefix("--devices "))
    return tuple(normal(d) or d for d in devices)


def workers_option() -> Any:
    return option(1, "worker processes, each with its own copy of the model, each running a "
                  "contiguous shard of the prompts, merged exactly (1: this process)", min=1,
                  identity=False)


def devices_option() -> Any:
    return option((), "devices, one per worker: cuda:0,cuda:1 or 0,1 (cpu,cpu: two CPU "
                  "workers) (default: every worker on the model's default device)",
                  parse=device_list, identity=False, metavar="DEVICES")


def check_workers(workers: int, devices: tuple[str, ...], n_items: int, what: str,
                  error: Callable[[str], Exception], launcher: str = "local",
                  sbatch: Any = None) -> None:
    """``workers`` and ``devices`` against each other, the ``launcher`` and the ``n_items``
    (``what``) the run shards, and ``sbatch`` (``--slurm-additional-parameters``): one line
    (``error``) before anything loads."""
    why = devices_problem(devices) or (None if sbatch is None else sbatch_problem(sbatch))
    if why is not None:
        raise error(why)
    if launcher == "submitit" and devices:
        raise error("--devices names this machine's devices; a submitit job runs on the "
                    "GPUs it is given: drop --devices, give --gpus-per-node")
    if devices and len(devices) != workers:
        raise error(f"--devices names {len(devices)} device{'s' * (len(devices) != 1)} for "
                    f"{workers} worker{'s' * (workers != 1)}; give one device per worker (or "
                    "leave --devices out: every worker on the default device)")
    if workers > n_items:
        raise error(f"--workers {workers} is more than the {n_items} {what}; take at most "
                    f"{n_items}")


def launcher_option() -> Any:
    return option("local", "where the workers run: processes on this machine, or a submitit "
                  "job array, one job per shard (Slurm where srun is found, else local "
                  "subprocesses)", choices=LAUNCHERS, identity=False)


@dataclass
class Sharded:
    """``workers`` and ``devices``: run the forward passes in worker processes, one model
    copy each, over contiguous shards of the prompts (:mod:`analyses.kit.shard_pool`); with
    ``launcher`` ``submitit``, as the jobs of a submitit array with these Slurm requests
    (:mod:`analyses.kit.shard_array`)."""

    workers: int = workers_option()
    devices: tuple[str, ...] = devices_option()
    launcher: str = launcher_option()
    # submitit's parameters (Slurm's #SBATCH lines) for --launcher submitit
    gpus_per_node: int | None = resource_option("gpus_per_node", SUBMITTED)
    cpus_per_task: int | None = resource_option("cpus_per_task", SUBMITTED)
    mem_gb: float | None = resource_option("mem_gb", SUBMITTED)
    timeout_min: int = resource_option("timeout_min", SUBMITTED)
    slurm_partition: str | None = resource_option("slurm_partition", SUBMITTED)
    slurm_account: str | None = resource_option("slurm_account", SUBMITTED)
    slurm_additional_parameters: dict[str, Any] = resource_option(
        "slurm_additional_parameters", SUBMITTED)

    @property
    def sharded(self) -> bool:
        """Whether the run uses workers (more than one, pinned devices, or submitit jobs)."""
        return self.workers > 1 or bool(self.devices) or self.launcher == "submitit"


@dataclass
class ShardRecord:
    """What ran one shard of a stage (a run's summary lists them): its place (``shard`` of
    ``n_shards``; ``items``: its range [lo, hi) of the stage's prompts in the order they are
    batched, or of the store's parts for ``capture``), the ``device`` its
    worker ran on, its ``seconds`` (model opening included for a worker's first shard) and
    whether its finished part was ``reused`` from an earlier run."""

    stage: str
    shard: int
    n_shards: int
    items: list[int]
    device: str
    seconds: float
    reused: bool


@dataclass
class ShardingInfo:
    """How a run's forward passes were spread: ``workers``, their ``devices`` (empty: the
    default device), every shard's :class:`ShardRecord` and the ``launcher`` (``local``:
    processes here; ``submitit``: a job array)."""

    workers: int
    devices: list[str]
    shards: list[ShardRecord]
    launcher: str = "local"
