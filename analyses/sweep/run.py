"""``bayesgeom sweep``: a grid of wind-tunnel training runs (tasks × archs × presets × seeds),
each an ordinary run directory, aggregated into mean, sd and a 95 % t-interval per cell.

Cells live in ``out/cells/<task>-<arch>-<preset>-s<seed>/`` and are trained with
:func:`windtunnel.training.train`, so each one is held by one writer, resumes where it was
interrupted and is verified (checksums) before its metrics are reused. Before submitting a cell
the sweep reads its ``run.json``: a cell already finished with the same settings is not
submitted at all (a rerun does no work); an unfinished one resumes. A cell that fails is
recorded with its one-line error and the others go on; the command exits 1 if any failed.

Backends:

* ``local`` (default): ``--workers`` processes on this machine (spawned, each with
  ``cpu_count // workers`` torch threads, at most ``OMP_NUM_THREADS``), no server needed;
  with ``--devices`` (or ``--device cuda`` and ``CUDA_VISIBLE_DEVICES``) worker *i* is
  pinned to the *i*-th device and each device trains one cell at a time
  (:mod:`analyses.sweep.devices`);
* ``submitit``: Slurm job arrays through ``submitit`` (``pip install submitit``), each job
  asking for ``--gpus-per-node``, ``--cpus-per-task``, ``--mem-gb``, ``--timeout-min``, the
  partition, account and any other ``#SBATCH`` option (:mod:`analyses.kit.slurm_options`); where
  no Slurm is found it runs the cells as local subprocesses (its own local executor, each job
  pinned to a device of ``--devices`` in turn), which is how it is tested here.

Each cell's row (and its run's record) says where it trained: ``device``, as the machine names
it, and ``slot``, its worker's place in ``--devices``.

Writes ``cells.parquet`` (one row per cell: metrics, parameters, wall time, status, error),
``aggregate.parquet`` (tidy: task, arch, preset, metric, n, mean, sd, ci_low, ci_high),
``summary.json`` (with each task's untrained controls, :mod:`windtunnel.baselines`),
``manifest.json``, ``run.json`` and ``report.html``.

Example:
    >>> cfg = SweepConfig(tasks=("bijection",), archs=("transformer",), seeds=(0, 1))
    >>> [c.name for c in cells(cfg)]
    ['bijection-transformer-small-s0', 'bijection-transformer-small-s1']
"""

from __future__ import annotations

import os
import sys
import time
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pandas as pd

from ...records import BayesgeomError, finished_with, json_safe
from ...records.options import expect_config
from ...records.progress import tqdm
from ...windtunnel.train_config import TrainConfig
from ..kit.out_dirs import claim
from ..kit.slurm_options import submitit_executor, submitit_parameters
from ..kit.writer import write_run
from .config import BACKENDS, SweepConfig, json_lists, json_object  # noqa: F401 (re-exported)
from .devices import slots
from .evals import cached
from .result import METRICS, SweepCell, SweepResult
from .workers import local_runs, sigterm_stops, submitit_runs

#: the metrics aggregated per cell (TrainResult's report, plus size and time)


@dataclass(frozen=True)
class Cell:
    """One run of the grid: its name, folder and training configuration."""

    task: str
    arch: str
    preset: str
    seed: int
    train: TrainConfig = field(compare=False)
    #: task-parameter overrides of the extra held-out evaluations (:mod:`analyses.sweep.evals`)
    evals: tuple[dict[str, Any], ...] = field(default=(), compare=False)

    @property
    def name(self) -> str:
        return f"{self.task}-{self.arch}-{self.preset}-s{self.seed}"


def cells(cfg: SweepConfig) -> list[Cell]:
    """The grid in task, arch, preset, seed order, with each cell's TrainConfig."""
    out = []
    for task in cfg.tasks:
        for arch in cfg.archs:
            for preset in cfg.presets:
                for seed in cfg.seeds:
                    tc = TrainConfig(task=task, task_params=dict(cfg.task_params.get(task, {})),
                                     arch=arch, preset=preset, steps=cfg.steps, seed=seed,
                                     batch_size=cfg.batch_size, lr=cfg.lr,
                                     eval_every=cfg.eval_every, eval_size=cfg.eval_size,
                                     plateau_window=cfg.plateau_window,
                                     plateau_tol=cfg.plateau_tol,
                                     plateau_metric=cfg.plateau_metric,
                                     ckpt_every=max(1, min(1000, cfg.steps)),
                                     warmup_steps=cfg.warmup_steps,
                                     max_minutes=cfg.max_minutes, device=cfg.device)
                    out.append(Cell(task, arch, preset, seed, tc,
                                    tuple(cfg.eval_params.get(task, []))))
    return out


def finished_row(cell: Cell, out: Path) -> dict[str, Any] | None:
    """The metrics of a cell already finished in ``out`` with the same settings (verified by
    its checksums), else None: such a cell is not submitted again."""
    from ...windtunnel.runs import EXPERIMENT, read_finished

    rec = finished_with(out, EXPERIMENT, cell.train.settings(cell.train.validate()))
    if rec is None:
        return None
    extra = cached(out, list(cell.evals))
    if extra is None:  # evaluated again in a worker (training itself is reused there)
        return None

    summary, _ = read_finished(out)
    return {**{k: summary.get(k) for k in METRICS}, "steps": rec.get("steps_done"),
            "wall_s": rec.get("wall_s"), "stop_reason": rec.get("stop_reason"),
            "device": rec.get("device"), **extra}


def _failed(cell: Cell, e: BaseException) -> dict[str, Any]:
    """The row of a failed cell (its one-line error), said on stderr."""
    msg = " ".join(str(e).split()) or type(e).__name__
    print(f"bayesgeom sweep: cell {cell.name} failed: {msg}", file=sys.stderr)
    return {"status": "failed", "error": f"{type(e).__name__}: {msg}"}


# ---------------------------------------------------------------- the sweep
def run_sweep(cfg: SweepConfig) -> SweepResult:
    """Run (or reuse) every cell, then aggregate (module doc)."""
    t0 = time.perf_counter()
    expect_config(cfg, SweepConfig, "run_sweep")
    cfg.check()
    grid = cells(cfg)
    for c in grid:  # every cell's options and memory, before anything runs
        c.train.validate()
    if cfg.backend == "local":  # a Slurm job's devices are checked where it runs
        check_devices(cfg)
    with claim(cfg) as rd:
        result = _sweep(cfg, grid, rd.out, t0)
        rd.finish()
    return result


def check_devices(cfg: SweepConfig) -> None:
    """Every device a worker of this machine trains on exists here (one line if not)."""
    from ...interp import check_device

    for device in {*(cfg.slot_devices() or ()), *([cfg.device] if cfg.device else [])}:
        check_device(device)


def _runs(cfg: SweepConfig, todo: list[tuple[Cell, Path]], out: Path) -> Iterator[Any]:
    """The cells' results as they come: a local pool with a worker per device, or submitit
    (:mod:`analyses.sweep.workers`)."""
    devices = cfg.slot_devices()
    pinned = slots(devices, os.environ) if devices else None
    if cfg.backend == "local":
        return local_runs(todo, cfg.worker_count(), pinned)
    ex = submitit_executor(out / "submitit", submitit_parameters(cfg, cfg.worker_count()))
    if ex.cluster == "local":
        check_devices(cfg)
    return submitit_runs(todo, ex, pinned, given=cfg.devices is not None)


def _sweep(cfg: SweepConfig, grid: list[Cell], out: Path, t0: float) -> SweepResult:
    rows: dict[str, dict[str, Any]] = {}
    todo: list[tuple[Cell, Path]] = []
    for c in grid:
        path = out / "cells" / c.name
        try:
            done = finished_row(c, path)
        except BayesgeomError as e:  # a finished cell whose files fail verification
            rows[c.name] = _failed(c, e)
            continue
        if done is None:
            todo.append((c, path))
        else:
            rows[c.name] = {**done, "status": "reused", "error": None}
    bar = tqdm(total=len(grid), initial=len(rows), desc="sweep cells", unit="cell",
               disable=not cfg.progress)
    if todo:
        with sigterm_stops():
            for cell, result in _runs(cfg, todo, out):
                try:
                    rows[cell.name] = {**result(), "status": "trained", "error": None}
                except Exception as e:  # a failed cell is recorded, not fatal
                    rows[cell.name] = _failed(cell, e)
                bar.update(1)
    bar.close()
    extra = cfg.extra_metrics()
    table = pd.DataFrame([{"cell": c.name, "task": c.task, "arch": c.arch, "preset": c.preset,
                           "seed": c.seed, **{k: None for k in (*METRICS, *extra)},
                           **rows.get(c.name, {"status": "missing"})} for c in grid])
    from ...windtunnel.baselines import task_controls
    from .paper_table import paper_table
    from .report import LABELS, aggregate, write_report

    agg = aggregate(table, (*LABELS, *extra))
    controls = {t: task_controls(t, dict(cfg.task_params.get(t, {})), cfg.seeds[0],
                                 grid[0].train.final_eval_size) for t in cfg.tasks}
    result = SweepResult(
        cells=[SweepCell(str(r.cell), str(r.task), str(r.arch), str(r.preset), int(r.seed),
                         str(r.status), r.error if isinstance(r.error, str) else None)
               for r in table.itertuples()],
        aggregate=json_safe(agg.to_dict("records")),
        reused=int((table["status"] == "reused").sum()),
        trained=int((table["status"] == "trained").sum()),
        failed=int((table["status"] == "failed").sum()),
        backend=cfg.backend, wall_s=round(time.perf_counter() - t0, 2), controls=controls)
    paper = paper_table(table, controls)
    write_run(cfg, result, tables={"cells.parquet": table, "aggregate.parquet": agg,
                                   "paper_table.parquet": paper},
              report=lambda path, manifest: write_report(path, result, table, agg, paper,
                                                         manifest))
    return result
