"""Part 2, throughput: wind-tunnel training steps per second on the device against the CPU,
per preset, measured in the same session (the CPU figure is this machine's CPU with torch's
default thread count).

One step is the training loop's own (:func:`windtunnel.training.train` without its logging,
evaluation and checkpoints): a fresh batch from the task's training stream, moved to the
device, :func:`windtunnel.training.task_loss`, backward, gradient clipping, AdamW, and the
``loss.item()`` the loop reads (one device sync per step, as in training). Each (preset,
device) runs ``warmup`` untimed steps, then steps until ``seconds`` have passed.
"""

from __future__ import annotations

import time
from typing import Any

import torch

from bayesgeom.windtunnel import make_task
from bayesgeom.windtunnel.architectures import build_model, n_params
from bayesgeom.windtunnel.seeds import Purpose, stream
from bayesgeom.windtunnel.training import TrainConfig, make_optimizer, task_loss

from .clock import Deadline

#: preset -> (task, task parameters, arch): the paper presets with the paper's models
#: (bijection: the Llama-style production model; HMM: the 9-layer GPT-2 layout)
PRESETS: dict[str, tuple[str, dict[str, Any], str]] = {
    "tiny": ("bijection", {"V": 20}, "transformer"),
    "small": ("bijection", {"V": 20}, "transformer"),
    "small-deep": ("hmm", {"K": 20}, "transformer"),
    "paper": ("bijection", {"V": 20}, "llama"),
    "paper-hmm": ("hmm", {"K": 20}, "transformer"),
}
BATCH = 64  # the paper sweeps' batch (examples/sweeps/paper_*.toml)


def _sync(device: torch.device) -> None:
    if device.type == "cuda":
        torch.cuda.synchronize(device)


def steps_per_second(preset: str, device: str, seconds: float, warmup: int = 3,
                     batch_size: int = BATCH) -> dict[str, Any]:
    """Training steps/s (and sequences/s) of ``preset``'s model on ``device``."""
    task_name, params, arch = PRESETS[preset]
    cfg = TrainConfig(task=task_name, task_params=params, arch=arch, preset=preset,
                      batch_size=batch_size)
    task = make_task(task_name, **params)
    dev = torch.device(device)
    model = build_model(task, arch, preset, cfg.seed).to(dev).train()
    opt = make_optimizer(model, cfg)
    step, t0 = 0, 0.0
    while True:
        if step == warmup:
            _sync(dev)
            t0 = time.perf_counter()
        elif step > warmup and time.perf_counter() - t0 >= seconds:
            break
        batch = task.sample(batch_size, stream(cfg.seed, Purpose.TRAIN, step)).to(dev)
        loss = task_loss(model, task, batch)
        opt.zero_grad(set_to_none=True)
        loss.backward()
        torch.nn.utils.clip_grad_norm_(model.parameters(), cfg.grad_clip)
        opt.step()
        loss.item()
        step += 1
    _sync(dev)
    wall, timed = time.perf_counter() - t0, step - warmup
    return {"preset": preset, "task": task_name, "arch": arch, "device": str(dev),
            "params": n_params(model), "batch_size": batch_size, "timed_steps": timed,
            "wall_s": round(wall, 3), "steps_per_s": round(timed / wall, 2),
            "seq_per_s": round(timed * batch_size / wall, 1)}


def run_throughput(device: str, deadline: Deadline, presets: tuple[str, ...],
                   seconds: float, warmup: int = 3) -> dict[str, Any]:
    """Per preset, the device's and the CPU's steps/s and their ratio; presets the budget
    does not reach are listed as skipped."""
    rows, skipped = [], []
    for preset in presets:
        if deadline.over(2.5 * seconds):
            skipped.append(preset)
            continue
        on_dev = steps_per_second(preset, device, seconds, warmup)
        on_cpu = steps_per_second(preset, "cpu", seconds, warmup)
        keys = ("preset", "task", "arch", "params", "batch_size", "device")
        rows.append({**{k: on_dev[k] for k in keys},
                     **{f"{side}_{k}": r[k] for side, r in (("device", on_dev), ("cpu", on_cpu))
                        for k in ("steps_per_s", "seq_per_s", "timed_steps")},
                     "cpu_threads": torch.get_num_threads(),
                     "speedup": round(on_dev["steps_per_s"] / on_cpu["steps_per_s"], 2)})
    return {"presets": rows, "skipped": skipped, "seconds_per_measurement": seconds,
            "warmup_steps": warmup}
