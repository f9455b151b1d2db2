"""HMM filtering: training wall time to 0.05 / 0.02 / 0.01 bits entropy MAE at K = 20 on CPU.

Trains the HMM tunnel (S = O = 5, K = 20, soft targets, batch 64) under a wall-time budget
(default 15 minutes, the issue's target) for each candidate recipe, the *baseline* being the
README's recipe (the GPT-2 ``transformer`` at the ``small`` preset). The candidates run
concurrently, one per core, each with one torch thread, so they share the machine's cores
equally and their times compare directly. Every ``--eval-every`` steps the held-out per-sample
entropy MAE (Paper I, bits, 500 sequences) is logged; the report gives, per recipe, the first
wall time at which it reached each threshold (``elapsed_s`` of the metrics log: time since the
run started, the periodic evaluations included, as the time budget counts them), the steps
made, the final MAE on 2,000 held-out sequences at K = 20, 30 and 50, and each recipe's time to
threshold as a ratio to the baseline's. Writes runs/bench/hmm_time_to_bits[-CANDIDATES].json.

    python benchmarks/hmm_time_to_bits.py                  # 15 minutes (2 cores)
    python benchmarks/hmm_time_to_bits.py --minutes 2      # a quick look
    python benchmarks/hmm_time_to_bits.py --candidates llama-rope/small-deep

Candidates (``--candidates``, each run beside the baseline): ``transformer/small-deep`` (the
default: the baseline at twice the depth, for the filter's recursion), ``llama/small``,
``llama-rope/small-deep``.
"""

from __future__ import annotations

import argparse
import multiprocessing as mp
import shutil
import tempfile
from pathlib import Path

BASELINE = "transformer/small"
RECIPES = {name: dict(zip(("arch", "preset"), name.split("/"), strict=True))
           for name in (BASELINE, "transformer/small-deep", "llama/small",
                        "llama-rope/small-deep")}
THRESHOLDS = (0.05, 0.02, 0.01)


def run_recipe(name: str, minutes: float, eval_every: int, root: str) -> dict:
    import pandas as pd
    import torch

    from windtunnel.evaluate import evaluate
    from windtunnel.training import TrainConfig, train

    torch.set_num_threads(1)
    cfg = TrainConfig(task="hmm", batch_size=64, steps=1_000_000, max_minutes=minutes,
                      eval_every=eval_every, eval_size=500, seed=0, **RECIPES[name])
    out = Path(root) / name.replace("/", "-")
    res = train(cfg, out, progress=False)
    log = pd.read_parquet(out / "metrics.parquet").dropna(subset=["eval_entropy_mae_bits"])
    reached = {}
    for t in THRESHOLDS:
        hit = log[log["eval_entropy_mae_bits"] <= t]
        reached[str(t)] = None if hit.empty else float(hit["elapsed_s"].iloc[0])
    from windtunnel.checkpoint import load_model

    model = load_model(out / "model")
    task = cfg.validate()
    final = {f"K={k}": evaluate(model, task.with_K(k), 2000, 0, logit_lens=False)
             .entropy_mae_bits for k in (20, 30, 50)}
    return {"recipe": name, **RECIPES[name], "params": res.params, "steps": res.steps_done,
            "train_s": res.wall_s, "seconds_to_bits": reached, "final_mae_bits": final,
            "curve": log[["step", "elapsed_s", "eval_entropy_mae_bits"]].values.tolist()}


def main() -> None:
    from records import run_manifest, write_json

    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--minutes", type=float, default=15.0)
    ap.add_argument("--eval-every", type=int, default=250)
    ap.add_argument("--candidates", default="transformer/small-deep",
                    help=f"comma-separated, from {', '.join(list(RECIPES)[1:])}")
    a = ap.parse_args()
    names = [BASELINE, *a.candidates.split(",")]
    bad = [n for n in names if n not in RECIPES]
    if bad:
        ap.error(f"unknown recipe(s) {', '.join(bad)}; choose from {', '.join(RECIPES)}")
    root = tempfile.mkdtemp(prefix="hmm-bench-")
    try:
        with mp.get_context("spawn").Pool(len(names)) as pool:
            rows = pool.starmap(run_recipe, [(n, a.minutes, a.eval_every, root)
                                             for n in names])
    finally:
        shutil.rmtree(root, ignore_errors=True)
    base = rows[0]["seconds_to_bits"]
    for r in rows:
        r["ratio_to_baseline"] = {t: (None if r["seconds_to_bits"][t] is None or base[t] is None
                                      else r["seconds_to_bits"][t] / base[t]) for t in base}
        hits = ", ".join(f"{t} bits {'not reached' if s is None else f'at {s:.0f} s'}"
                         for t, s in r["seconds_to_bits"].items())
        fin = ", ".join(f"{k} {v:.4f}" for k, v in r["final_mae_bits"].items())
        print(f"{r['recipe']:<24} {r['params']:>8,} params {r['steps']:>6} steps: {hits}; "
              f"final MAE {fin}", flush=True)
    tag = "" if names[1:] == ["transformer/small-deep"] else "-" + "-".join(
        n.replace("/", "_") for n in names[1:])
    write_json(Path(f"runs/bench/hmm_time_to_bits{tag}.json"),
               {"manifest": run_manifest(), "minutes": a.minutes, "threads_per_recipe": 1,
                "thresholds_bits": THRESHOLDS, "results": rows})


if __name__ == "__main__":
    main()
