"""Seconds per training step of each wind-tunnel architecture, as a ratio to the transformer
measured in the same run (the baseline): forward + backward + AdamW on a fresh batch of 128
sequences, the ``small`` preset (each baseline parameter-matched to the transformer), 2 torch
threads, the median of steps 2-4 (step 1 warms up). Mamba is timed twice: with mambapy's
parallel scan (what HF uses where ``mambapy`` is installed, a bayesgeom dependency) and with HF's
sequential reference scan (``mamba/reference-scan``). Writes runs/bench/arch_step_time.json.

    python benchmarks/arch_step_time.py              # bijection V = 20 and HMM (~3 min on 2 cores)
"""

from __future__ import annotations

import statistics
import time
from pathlib import Path

import torch

from bayesgeom.records import run_manifest, write_json
from bayesgeom.windtunnel import make_token_task
from bayesgeom.windtunnel.architectures import ARCHS, build_model
from bayesgeom.windtunnel.training import task_loss

TASKS = ("bijection", "hmm")
STEPS = 4


def step_seconds(task_name: str, arch: str, reference_scan: bool = False) -> float:
    task = make_token_task(task_name)
    model = build_model(task, arch, "small", 0)
    if reference_scan:  # HF's sequential scan instead of mambapy's parallel one
        for layer in model.backbone.layers:
            layer.mixer.use_mambapy = False
    opt = torch.optim.AdamW(model.parameters(), lr=1e-3)
    times = []
    for s in range(STEPS):
        batch = task.sample(128, s)
        t = time.perf_counter()
        loss = task_loss(model, task, batch)
        opt.zero_grad()
        loss.backward()
        opt.step()
        times.append(time.perf_counter() - t)
    return statistics.median(times[1:])


def main() -> None:
    torch.set_num_threads(2)
    out: dict = {"manifest": run_manifest(), "batch": 128, "preset": "small", "results": {}}
    for task in TASKS:
        base = step_seconds(task, "transformer")
        for arch, ref in [(a, False) for a in ARCHS] + [("mamba", True)]:
            sec = base if arch == "transformer" else step_seconds(task, arch, ref)
            name = "mamba/reference-scan" if ref else arch
            out["results"][f"{task}/{name}"] = {"s_per_step": sec, "ratio_to_transformer":
                                                sec / base}
            print(f"{task:<10} {name:<21} {sec:8.3f} s/step  {sec / base:7.1f}x transformer",
                  flush=True)
    write_json(Path("runs/bench/arch_step_time.json"), out)


if __name__ == "__main__":
    main()
