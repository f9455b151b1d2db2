"""Seconds per model-step of ``bayesgeom dynamics em-vs-sgd``'s batched trainer
(:mod:`analyses.dynamics.em_vs_sgd.sticky_trainer`), as a ratio to the plain per-step loop
(:func:`analyses.dynamics.em_vs_sgd.reference.train_reference`: autograd, one head, the M-step
by ``torch.linalg.lstsq``) measured in the same run (the baseline) on the same work.

For each protocol family (SGD, Adam, the closed-form M-step, its uniform ablation): the five
evaluation seeds' sequences (T = 2000), ``--steps`` steps each, run once by the loop (run by
run) and once by the batched trainer (the five seeds stacked, as the experiment runs them);
seconds per model-step = wall time / (runs × steps), after one warm-up step of each. The
final losses of the two are compared too (max |Δ|). Threads: ``--threads`` (default 1: on a
shared 2-core machine one thread per process is faster than two). Writes
runs/bench/em_vs_sgd_speed.json.

    python benchmarks/em_vs_sgd_speed.py            # 20 steps x 5 seeds x 4 protocols
    python benchmarks/em_vs_sgd_speed.py --quick    # 5 steps
"""

from __future__ import annotations

import argparse
import time
from pathlib import Path

import numpy as np
import torch

from bayesgeom.analyses.dynamics.em_vs_sgd.protocols import PROTOCOLS
from bayesgeom.analyses.dynamics.em_vs_sgd.reference import train_reference
from bayesgeom.analyses.dynamics.em_vs_sgd.sticky_trainer import train_batch
from bayesgeom.records import run_manifest, write_json
from bayesgeom.windtunnel import sticky_chain as sc

CASES = {"sgd_tuned": 0.3, "adam": 0.01, "em_closed_form": 100.0, "em_uniform": 100.0}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__,
                                 formatter_class=argparse.RawTextHelpFormatter)
    ap.add_argument("--steps", type=int, default=20)
    ap.add_argument("--quick", action="store_true", help="5 steps")
    ap.add_argument("--threads", type=int, default=1)
    a = ap.parse_args()
    steps = 5 if a.quick else a.steps
    torch.set_num_threads(a.threads)
    seqs = [sc.make_sequence(s) for s in sc.SEEDS]
    out: dict = {"manifest": run_manifest(), "steps": steps, "runs": len(seqs),
                 "threads": a.threads, "results": {}}
    print(f"{'protocol':<16} {'loop ms/step':>13} {'batched ms/step':>16} {'ratio':>8} "
          f"{'max |Δ final loss|':>19}", flush=True)
    for name, value in CASES.items():
        st = PROTOCOLS[name].settings(value)
        train_reference(st, seqs[0], 1)  # warm-up
        train_batch(seqs, [st] * len(seqs), 1)
        t0 = time.perf_counter()
        ref = [train_reference(st, s, steps)[0] for s in seqs]
        loop = (time.perf_counter() - t0) / (len(seqs) * steps)
        t0 = time.perf_counter()
        got = train_batch(seqs, [st] * len(seqs), steps)
        fast = (time.perf_counter() - t0) / (len(seqs) * steps)
        diff = float(np.max(np.abs(got.losses[:, -1] - np.array([r[-1] for r in ref]))))
        out["results"][name] = {"loop_s_per_step": loop, "batched_s_per_step": fast,
                                "ratio_loop_to_batched": loop / fast, "max_abs_diff": diff}
        print(f"{name:<16} {loop * 1e3:13.1f} {fast * 1e3:16.1f} {loop / fast:7.1f}x "
              f"{diff:19.1e}", flush=True)
    write_json(Path("runs/bench/em_vs_sgd_speed.json"), out)


if __name__ == "__main__":
    main()
