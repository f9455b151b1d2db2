"""The GPU session's orchestration: the four parts in order (correctness, throughput, scale,
Paper I), each stopped at its own budget, and the result files (fewer than :data:`MAX_FILES`
with the console log, each well under 16 MiB) in one folder.

Files written to ``out``:

==========================  ================================================================
``session.json``            device, versions, budgets and time spent per part, the
                            correctness summary, the imports audit (what the GPU machine
                            lacks), the list of files
``correctness.parquet``     one row per (family, dtype, check, quantity): device and CPU
                            difference, tolerance, pass, repeat difference, status
``throughput.json``         steps/s per preset on the device and on the CPU, and the ratio
``scale.json``              issue 39's per-device pinning (gpu/scale.py): a two-cell sweep
                            pinned to the device, each cell's recorded device; geometry with
                            one pinned worker against this process, the largest metric
                            difference and each shard's device
``paper.json``              Paper I runs (steps, final evaluation, HMM lengths) beside the
                            published figures and the HMM control ladder
``paper_log.parquet``       the training logs of those runs (loss, held-out MAE by step)
==========================  ================================================================

The device command adds ``log.txt`` (the console), seven files in all.
"""

from __future__ import annotations

import platform
import shutil
import tempfile
import traceback
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pandas as pd
import torch

from bayesgeom.records import run_manifest, write_json, write_table

from .clock import SessionClock
from .correctness import dry_plan, full_plan, run_correctness
from .paper import run_paper
from .scale import run_scale
from .throughput import PRESETS, run_throughput
from .wheels import ImportRecorder, needed, requirements

MAX_FILES = 8
#: the checkout (the scale part's geometry reads its committed tunnel)
ROOT = Path(__file__).resolve().parents[2]


@dataclass
class Plan:
    """What the session runs: budgets in seconds (the dry run shrinks every part to
    seconds)."""

    dry: bool
    total_s: float
    correctness_s: float
    throughput_s: float
    presets: tuple[str, ...]
    seconds_per_measurement: float
    paper_s: dict[str, float] = field(default_factory=dict)
    scale_s: float = 60.0

    @classmethod
    def make(cls, dry: bool, total_s: float | None, paper_s: float | None,
             tasks: tuple[str, ...] | None = None) -> Plan:
        """The plan; ``tasks``: the Paper I runs in order (default all three; recall trains
        at most 40 s unless it runs alone). The defaults add up to the session's 465 s less
        its 10-s reserve: correctness 30 + throughput 50 + scale 60 + Paper I's runs, each
        with its evaluation allowance (115 + 15, 115 + 15, 40 + 15) = 455 s (Paper I takes
        what the parts before it leave, so the runs fit even when those use their whole
        budgets)."""
        tasks = tasks or ("bijection", "hmm", "assoc_recall")
        if dry:
            return cls(True, total_s or 120.0, 40.0, 15.0, ("tiny",), 0.3,
                       dict.fromkeys(tasks, 1.0), scale_s=30.0)
        run = paper_s or 115.0
        cap = {"assoc_recall": 40.0} if len(tasks) > 1 else {}
        return cls(False, total_s or 465.0, 30.0, 50.0, tuple(p for p in PRESETS
                                                              if p != "small-deep"), 4.0,
                   {t: min(run, cap.get(t, run)) for t in tasks}, scale_s=60.0)


def device_record(device: str) -> dict[str, Any]:
    d = torch.device(device)
    rec: dict[str, Any] = {"device": str(d), "cpu_only": d.type == "cpu",
                           "cuda_available": torch.cuda.is_available(),
                           "torch_threads": torch.get_num_threads(),
                           "processor": platform.processor() or platform.machine()}
    if d.type == "cuda":
        p = torch.cuda.get_device_properties(d)
        rec.update(name=p.name, memory_gib=round(p.total_memory / 2**30, 1),
                   multiprocessors=p.multi_processor_count, cuda=torch.version.cuda,
                   cudnn=torch.backends.cudnn.version(),
                   deterministic_algorithms=torch.are_deterministic_algorithms_enabled(),
                   cudnn_deterministic=torch.backends.cudnn.deterministic,
                   cudnn_benchmark=torch.backends.cudnn.benchmark,
                   float32_matmul_precision=torch.get_float32_matmul_precision())
    return rec


def run_session(out: Path, device: str, plan: Plan, recorder: ImportRecorder,
                hidden: list[str], keep_runs: Path | None = None) -> int:
    """Run the parts of ``plan`` on ``device``, write the files to ``out`` (``session.json``
    after every part, so a run cut short still says how far it got); the exit status: 0 when
    every part ran and every judged check passed, 1 otherwise."""
    clock = SessionClock(plan.total_s, reserve_s=5.0 if plan.dry else 10.0)
    out.mkdir(parents=True, exist_ok=True)
    session: dict[str, Any] = {"dry_run": plan.dry, "budget_s": plan.total_s,
                               **device_record(device), "passed": None}
    written: list[str] = []
    ok = True

    def save(status: str, d: Any, files: dict[str, Any]) -> None:
        nonlocal ok
        for name, data in files.items():
            (write_table if name.endswith(".parquet") else write_json)(out / name, data)
            written.append(name)
        ok &= not status.startswith("error")
        clock.record(d, status)
        ours = recorder.ours()
        session.update(parts=clock.parts, elapsed_s=round(clock.elapsed(), 1),
                       imports={"by_this_project": ours, "lacking_on_gpu_machine": needed(ours),
                                "carried_wheels": requirements(), "hidden_here": hidden},
                       files=[*written, "session.json"])
        assert len(session["files"]) < MAX_FILES  # the device's limit; log.txt comes on top
        write_json(out / "session.json", session)

    d = clock.part("correctness", plan.correctness_s)
    try:
        rows, summary = run_correctness(device, d, dry_plan() if plan.dry else full_plan(),
                                        repeats=1 if plan.dry else 2)
        session["correctness"] = summary
        ok &= not summary["failed"]
        save("partial" if summary["skipped"] else "done", d,
             {"correctness.parquet": pd.DataFrame(rows)})
    except Exception as e:
        save(_error(e, session, "correctness"), d, {})

    d = clock.part("throughput", plan.throughput_s)
    try:
        tp = run_throughput(device, d, plan.presets, plan.seconds_per_measurement,
                            warmup=1 if plan.dry else 3)
        save("partial" if tp["skipped"] else "done", d, {"throughput.json": tp})
    except Exception as e:
        save(_error(e, session, "throughput"), d, {})

    d = clock.part("scale", plan.scale_s)
    scratch = Path(tempfile.mkdtemp(prefix="bg-gpu-scale-"))
    try:
        scale = run_scale(device, d, scratch, ROOT, plan.dry)
        session["scale"] = _scale_line(scale)
        status = ("error: " + ", ".join(scale["failed"]) if scale.get("failed") else
                  "partial" if scale["skipped"] else "done")
        save(status, d, {"scale.json": scale})
    except Exception as e:
        save(_error(e, session, "scale"), d, {})
    finally:
        shutil.rmtree(scratch, ignore_errors=True)

    d = clock.part("paper", clock.left())
    work = Path(tempfile.mkdtemp(prefix="bg-gpu-session-")) if keep_runs is None else keep_runs
    try:
        paper, logs = run_paper(device, d, plan.paper_s, work, plan.dry)
        status = ("error: " + ", ".join(paper["failed"]) if paper.get("failed") else
                  "partial" if paper["skipped"] else "done")
        save(status, d, {"paper.json": paper, "paper_log.parquet": logs})
    except Exception as e:
        save(_error(e, session, "paper"), d, {})
    finally:
        if keep_runs is None:
            shutil.rmtree(work, ignore_errors=True)

    session.update(passed=ok, manifest=run_manifest(packages=("accelerate", "pyarrow",
                                                              "scikit-learn")))
    write_json(out / "session.json", session)
    print(f"gpu session: {'passed' if ok else 'FAILED'} in {clock.elapsed():.0f} s; "
          f"files in {out}: {', '.join(session['files'])}")
    for name, p in clock.parts.items():
        print(f"  {name}: {p['status']} ({p['spent_s']} s of {p['budget_s']} s)")
    for cell in session.get("correctness", {}).get("failed", []):
        print(f"  failed: {cell}")
    return 0 if ok else 1


def _scale_line(scale: dict[str, Any]) -> dict[str, Any]:
    """The scale part in brief for ``session.json``: per half, whether it passed, the devices
    its cells and shards recorded, the largest metric difference."""
    sweep, geo = scale.get("sweep") or {}, scale.get("geometry") or {}
    return {"device": scale["device"], "sweep_passed": sweep.get("passed"),
            "sweep_cell_devices": [c.get("run_device") for c in sweep.get("cells", [])],
            "geometry_passed": geo.get("passed"),
            "geometry_max_abs_diff": geo.get("max_abs_diff_named"),
            "geometry_shard_devices": sorted({s["device"] for s in geo.get("shards", [])}),
            "skipped": scale["skipped"], "not_in_dry_run": scale["not_in_dry_run"]}


def _error(e: Exception, session: dict[str, Any], part: str) -> str:
    line = f"error: {type(e).__name__}: {' '.join(str(e).split())[:300]}"
    session.setdefault("errors", {})[part] = traceback.format_exc(limit=8)[-3000:]
    print(f"{part}: {line}")
    return line
