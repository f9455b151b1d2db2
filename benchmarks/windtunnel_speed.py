"""Wind-tunnel training speed: throughput and wall time to 0.05 / 0.01 bits entropy MAE.

Runs, in one process on this machine:
1. a *baseline*: the bare PyTorch step (pre-sampled batches, forward + backward + AdamW) on the
   same model, which bounds what any training loop can reach;
2. the bayesgeom training loop (fresh sampling + posterior each step, logging, periodic held-out
   evaluation, atomic checkpoints) with the ``small`` recipe on bijection V = 20,

and reports sequences/s for both, their ratio, and the training wall time (evaluation included)
at which the held-out per-sample entropy MAE first reached each threshold.

    python benchmarks/windtunnel_speed.py            # full recipe (~7 min on 2 cores)
    python benchmarks/windtunnel_speed.py --quick    # 1,000 steps, thresholds may not be reached
"""

from __future__ import annotations

import argparse
import json
import shutil
import tempfile
import time
from pathlib import Path

import torch

from bayesgeom.records import run_manifest, write_json
from bayesgeom.windtunnel import make_task
from bayesgeom.windtunnel.architectures import build_model
from bayesgeom.windtunnel.training import TrainConfig, make_optimizer, task_loss, train


def bare_step_throughput(cfg: TrainConfig, n_steps: int = 150, warmup: int = 10) -> float:
    """Sequences/s of forward+backward+AdamW on pre-sampled batches (no sampling, no eval)."""
    task = make_task(cfg.task, **cfg.task_params)
    model = build_model(task, cfg.arch, cfg.preset, cfg.seed)
    opt = make_optimizer(model, cfg)
    batches = [task.sample(cfg.batch_size, (cfg.seed, 10**6 + i)) for i in range(n_steps + warmup)]
    for i, b in enumerate(batches):
        if i == warmup:
            t0 = time.perf_counter()
        loss = task_loss(model, task, b)
        opt.zero_grad(set_to_none=True)
        loss.backward()
        torch.nn.utils.clip_grad_norm_(model.parameters(), cfg.grad_clip)
        opt.step()
    return n_steps * cfg.batch_size / (time.perf_counter() - t0)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawTextHelpFormatter)
    ap.add_argument("--steps", type=int, default=10_000)
    ap.add_argument("--quick", action="store_true", help="1,000 steps")
    ap.add_argument("--eval-every", type=int, default=250)
    ap.add_argument("--thresholds", type=float, nargs="+", default=[0.05, 0.01])
    ap.add_argument("--out", type=Path, default=Path("runs/bench/windtunnel_speed.json"))
    a = ap.parse_args()
    steps = 1000 if a.quick else a.steps
    cfg = TrainConfig(
        task="bijection",
        task_params={"V": 20},
        arch="transformer",
        preset="small",
        steps=steps,
        eval_every=a.eval_every,
        ckpt_every=max(1000, steps // 5),
    )

    base = bare_step_throughput(cfg)
    tmp = Path(tempfile.mkdtemp(prefix="bg-bench-"))
    try:
        res = train(cfg, tmp / "run", progress=True)
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    log = res.log
    ev = log.dropna(subset=["eval_entropy_mae_bits"])
    reached = {}
    for th in a.thresholds:
        hit = ev[ev["eval_entropy_mae_bits"] <= th]
        reached[str(th)] = (
            None
            if hit.empty
            else {
                "wall_s": round(float(hit["elapsed_s"].iloc[0]), 1),
                "step": int(hit["step"].iloc[0]),
            }
        )
    loop = res.steps_done * cfg.batch_size / res.wall_s
    out = {
        "benchmark": "windtunnel_speed",
        "task": "bijection V=20",
        "preset": "small",
        "steps": res.steps_done,
        "batch_size": cfg.batch_size,
        "baseline_bare_step_seq_per_s": round(base, 1),
        "train_loop_seq_per_s": round(loop, 1),
        "ratio_loop_over_baseline": round(loop / base, 3),
        "train_wall_s": round(res.wall_s, 1),
        "final_entropy_mae_bits": res.report.entropy_mae_bits,
        "time_to_threshold": reached,
        "manifest": run_manifest(seed=cfg.seed, dtype="float32"),
    }
    write_json(a.out, out)
    print(json.dumps({k: v for k, v in out.items() if k != "manifest"}, indent=2))


if __name__ == "__main__":
    main()
