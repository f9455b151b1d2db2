"""Train a small transformer on bijection elimination and compare it with the exact posterior.

    python examples/windtunnel_quickstart.py            # ~1 minute on 2 CPU cores
    python examples/windtunnel_quickstart.py --steps 3000 --out runs/examples/bij

The same ``TrainConfig`` drives ``bayesgeom windtunnel train``; everything lands in ``--out``
(metrics.parquet, eval.json, figures.html, the Hugging Face model directory).
"""

from __future__ import annotations

import argparse

from bayesgeom.windtunnel import make_task
from bayesgeom.windtunnel.evaluate import evaluate
from bayesgeom.windtunnel.runs import load_run
from bayesgeom.windtunnel.training import TrainConfig, train


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--steps", type=int, default=600)
    ap.add_argument("--out", default="runs/examples/bijection-quickstart")
    args = ap.parse_args()

    # 1. The task: every sequence gets a fresh random bijection; the posterior is exact (fp64).
    task = make_task("bijection", V=20)
    batch = task.sample(2, seed=0)
    print("tokens:", batch.input_ids[0].tolist())
    print("Bayes entropy per query (bits):", batch.entropy_bits[0].round(decimals=3).tolist())

    # 2. Train (resumes if interrupted; returns the finished run if it is already done).
    cfg = TrainConfig(task="bijection", arch="transformer", preset="small", steps=args.steps,
                      eval_every=max(args.steps // 3, 1), ckpt_every=max(args.steps // 3, 1))
    result = train(cfg, args.out)
    print(f"trained {result.steps_done} steps in {result.wall_s:.0f} s -> {result.out}")

    # 3. Reload and evaluate against the posterior, with the per-layer logit lens.
    run = load_run(args.out)
    rep = evaluate(run.model, run.task, n=1000, seed=1)
    print(f"entropy MAE {rep.entropy_mae_bits:.4f} bits, KL(Bayes||model) {rep.kl_bits:.4f} bits")
    for layer, kl in enumerate(rep.per_layer["kl_bits"], start=1):
        print(f"  logit lens after block {layer}: KL {kl:.4f} bits")


if __name__ == "__main__":
    main()
