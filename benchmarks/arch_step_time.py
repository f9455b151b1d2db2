"""Seconds per training step of each wind-tunnel architecture, as a ratio to the transformer
measured in the same run (the baseline): forward + backward + AdamW on a fresh batch of 128
sequences, the ``small`` preset (each baseline parameter-matched to the transformer), 2 torch
threads. Each arch's steps are interleaved with the transformer's (transformer step, arch
step, ... on the same batches), and the ratio is the median of the per-pair ratios over steps
2..STEPS (step 1 warms up): on a shared machine whose load drifts, a pair sees the same load,
where two medians taken minutes apart need not. ``--clock cpu`` times the process's CPU time
instead of wall time: with ``--threads 1`` it is what a step costs whatever else the machine
runs (an oversubscribed machine distorts wall-clock ratios, multi-threaded ones most).

An arch whose spec declares other forwards of the same weights (``ArchSpec.variants``) is
also timed through each as ``arch/variant``: Mamba-1 (``mamba``, mambapy's parallel scan, what
HF uses where ``mambapy`` is installed, a bayesgeom dependency) through HF's sequential
reference scan (``mamba/reference-scan``); ``mamba2`` (HF's Mamba-2 with bayesgeom's quadratic
SSD forward, :mod:`windtunnel.mamba2`) through HF's own chunked SSD, chunk 64
(``mamba2/hf-chunked``). Writes runs/bench/arch_step_time.json.

    python benchmarks/arch_step_time.py              # bijection V = 20 and HMM (~4 min on 2 cores)
    python benchmarks/arch_step_time.py --archs mamba mamba2 --steps 6
    python benchmarks/arch_step_time.py --threads 1 --clock cpu   # on a loaded machine
"""

from __future__ import annotations

import argparse
import os
import statistics
import time
from collections.abc import Callable
from pathlib import Path

import torch

from bayesgeom.records import run_manifest, write_json
from bayesgeom.windtunnel import make_token_task
from bayesgeom.windtunnel.arch_registry import ARCH_NAMES, arch_spec
from bayesgeom.windtunnel.architectures import build_model
from bayesgeom.windtunnel.task import TokenTask
from bayesgeom.windtunnel.training import task_loss

TASKS = ("bijection", "hmm")
STEPS = 5
#: the arch every other is timed against, in the same run
BASELINE = "transformer"
#: every arch but the baseline, then every declared variant, ``arch/variant``
DEFAULT = [*(a for a in ARCH_NAMES if a != BASELINE),
           *(f"{a}/{v}" for a in ARCH_NAMES for v in arch_spec(a).variants)]


CLOCKS: dict[str, Callable[[], float]] = {"wall": time.perf_counter, "cpu": time.process_time}


def stepper(task: TokenTask, arch: str, label: str = "", clock: str = "wall",
            ) -> Callable[[int], float]:
    """A closure: one timed training step (seconds of ``clock``) of ``arch`` on batch ``s``,
    through its forward ``variant`` (``label`` ``arch/variant``; "": its own)."""
    now = CLOCKS[clock]
    model = build_model(task, arch, "small", 0)
    if label:
        arch_spec(arch).variants[label.split("/", 1)[1]](model)
    opt = torch.optim.AdamW(model.parameters(), lr=1e-3)

    def step(s: int) -> float:
        batch = task.sample(128, s)
        t = now()
        loss = task_loss(model, task, batch)
        opt.zero_grad()
        loss.backward()
        opt.step()
        return now() - t

    return step


def paired(task: TokenTask, arch: str, label: str, steps: int, clock: str = "wall",
           ) -> dict[str, float]:
    """Interleaved steps of the transformer and ``arch``: medians of each one's seconds and
    of the per-pair ratio, over steps 2..``steps``."""
    base, other = stepper(task, BASELINE, clock=clock), stepper(task, arch, label, clock)
    tb, ta = [], []
    for s in range(steps):
        tb.append(base(s))
        ta.append(other(s))
    ratios = [a / b for a, b in zip(ta[1:], tb[1:], strict=True)]
    return {"s_per_step": statistics.median(ta[1:]),
            "transformer_s_per_step": statistics.median(tb[1:]),
            "ratio_to_transformer": statistics.median(ratios),
            "ratio_min": min(ratios), "ratio_max": max(ratios)}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--tasks", nargs="+", default=list(TASKS))
    ap.add_argument("--archs", nargs="+",
                    default=DEFAULT, help=f"archs and variants ({', '.join(DEFAULT)})")
    ap.add_argument("--steps", type=int, default=STEPS, help="steps per arch (the first warms up)")
    ap.add_argument("--threads", type=int, default=2, help="torch threads")
    ap.add_argument("--clock", choices=tuple(CLOCKS), default="wall",
                    help="wall time, or this process's CPU time")
    args = ap.parse_args()
    torch.set_num_threads(args.threads)
    runs = [(a, a.split("/")[0], a if "/" in a else "") for a in args.archs]
    out: dict = {"manifest": run_manifest(), "batch": 128, "preset": "small",
                 "steps": args.steps, "threads": args.threads, "clock": args.clock,
                 "load_average": os.getloadavg(),
                 "pairing": "interleaved, median of per-pair ratios",
                 "results": {}}
    for name in args.tasks:
        task = make_token_task(name)
        for label, arch, variant in runs:
            r = paired(task, arch, variant, args.steps, args.clock)
            out["results"][f"{name}/{label}"] = r
            print(f"{name:<10} {label:<21} {r['s_per_step']:8.3f} s/step  "
                  f"{r['ratio_to_transformer']:6.2f}x transformer "
                  f"(pairs {r['ratio_min']:.2f}-{r['ratio_max']:.2f}; transformer "
                  f"{r['transformer_s_per_step']:.3f} s)", flush=True)
    out["load_average_end"] = os.getloadavg()
    write_json(Path("runs/bench/arch_step_time.json"), out)


if __name__ == "__main__":
    main()
