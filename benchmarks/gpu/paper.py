"""Part 3, Paper I at paper scale for a fixed number of device minutes per task: bijection
V = 20 on the ``paper`` preset (the Llama-style production model, 2,677,440 parameters), the
HMM at K = 20 on ``paper-hmm`` (evaluated at K = 20, 30 and 50) beside its control ladder
(the history-free posterior and the windowed filters, w = 2, 3, 4), and associative recall if
the budget leaves time for it.

Each run is an ordinary :func:`windtunnel.training.train` run (the paper sweeps' batch 64 and
learning rate 3e-4, AdamW, warm-up then a cosine decay over the time budget: ``max_minutes``)
in a scratch folder, so the device path measured is the training code users run. Reported per
run: steps reached, the final held-out evaluation (entropy MAE, curve MAE, KL(Bayes ‖ model),
TVD, accuracy; 2,000 sequences), and Paper I's published figures beside them
(:data:`PAPER_I`; papers-spec §1.7). A run of a few minutes is far short of the paper's
100,000 steps (bijection) and 25,000 (HMM): the numbers say how far the budget goes.
"""

from __future__ import annotations

import time
import traceback
from pathlib import Path
from typing import Any

import pandas as pd

from bayesgeom.windtunnel import load_run, make_task
from bayesgeom.windtunnel.evaluate import evaluate
from bayesgeom.windtunnel.hmm import window_ladder
from bayesgeom.windtunnel.training import TrainConfig, train

from .clock import Deadline

#: Paper I's published results (papers-spec §1.7: v1 and v3 tables; HMM lengths from the
#: authors' README). Entropy MAE in bits per sample; recall as accuracy.
PAPER_I: dict[str, dict[str, Any]] = {
    "bijection": {"entropy_mae_bits": {"v1": 3e-3, "v3": 0.007}},
    "hmm": {"entropy_mae_bits": {"v1": 7.5e-5, "v3": 0.049},
            "entropy_mae_bits@K=30": 0.012, "entropy_mae_bits@K=50": 0.0288},
    "assoc_recall": {"accuracy": {"v3": 1.0}},
}
#: task -> (task parameters, arch, preset); extra evaluation lengths for the HMM
RUNS: dict[str, tuple[dict[str, Any], str, str]] = {
    "bijection": ({"V": 20}, "llama", "paper"),
    "hmm": ({"K": 20}, "transformer", "paper-hmm"),
    "assoc_recall": ({}, "llama", "paper"),
}
#: the dry run's smaller episodes (recall: 8 pairs, 2 queries, 4 fillers instead of 64, 3, 32)
DRY_PARAMS: dict[str, dict[str, Any]] = {"assoc_recall": {"N": 8, "M": 2, "F": 4}}
HMM_LENGTHS = (30, 50)
LADDER_WINDOWS = (2, 3, 4)
#: seconds a run needs beyond its training budget (build, final evaluation, extra lengths):
#: session A's three runs took 273 s for their 270 s of training (H200, 2026-11-27)
EVAL_ALLOWANCE = 15.0
REPORT_KEYS = ("n_sequences", "entropy_mae_bits", "entropy_mae_curve_bits", "kl_bits",
               "kl_model_bayes_bits", "tvd", "accuracy", "map_agreement",
               "mean_bayes_entropy_bits", "per_layer")


def config(task: str, device: str, minutes: float, dry: bool) -> TrainConfig:
    """The run of ``task`` (:data:`RUNS`) trained for ``minutes`` of wall time (the dry run:
    the ``tiny`` preset, 30 steps, small evaluations)."""
    params, arch, preset = RUNS[task]
    if dry:
        return TrainConfig(task=task, task_params={**params, **DRY_PARAMS.get(task, {})},
                           arch=arch, preset="tiny", steps=30,
                           batch_size=16, warmup_steps=5, eval_every=15, eval_size=32,
                           final_eval_size=64, log_every=5, ckpt_every=30, device=device)
    return TrainConfig(task=task, task_params=params, arch=arch, preset=preset,
                       steps=100_000, batch_size=64, lr=3e-4, eval_every=1000, eval_size=1000,
                       final_eval_size=2000, ckpt_every=100_000, max_minutes=minutes,
                       device=device)


def train_one(task: str, device: str, seconds: float, work: Path, dry: bool,
              ) -> tuple[dict[str, Any], pd.DataFrame]:
    """Train one run for ``seconds`` and evaluate it: (record, training log)."""
    cfg = config(task, device, seconds / 60.0, dry)
    t0 = time.perf_counter()
    res = train(cfg, work / task, progress=False)
    rec: dict[str, Any] = {
        "task": task, "arch": cfg.arch, "preset": cfg.preset, "task_params": cfg.task_params,
        "params": res.params, "batch_size": cfg.batch_size, "lr": cfg.lr,
        "budget_s": round(seconds, 1), "steps_done": res.steps_done,
        "stop_reason": res.stop_reason, "train_wall_s": round(res.wall_s, 2),
        "steps_per_s": round(res.steps_done / res.wall_s, 2) if res.wall_s else None,
        "final_eval": {k: getattr(res.report, k) for k in REPORT_KEYS} if res.report else None,
        "paper_i": PAPER_I[task],
    }
    if task == "hmm":
        rec["length_generalisation"] = _hmm_lengths(work / task, cfg, 100 if dry else 2000)
    rec["wall_s"] = round(time.perf_counter() - t0, 2)
    log = res.log.assign(task=task)
    return rec, log


def _hmm_lengths(run: Path, cfg: TrainConfig, n: int) -> dict[str, dict[str, float]]:
    """Entropy MAE and KL of the trained HMM model at K = 30 and 50 (the training run's seed
    and held-out streams)."""
    model = load_run(run).model.to(cfg.device or "cpu")
    out = {}
    for K in HMM_LENGTHS:
        rep = evaluate(model, make_task("hmm", **{**cfg.task_params, "K": K}), n, cfg.seed,
                       logit_lens=False)
        out[f"K={K}"] = {"entropy_mae_bits": rep.entropy_mae_bits, "kl_bits": rep.kl_bits,
                         "n_sequences": rep.n_sequences}
    return out


def hmm_ladder(n: int) -> dict[str, float]:
    """The HMM controls at K = 20 (entropy MAE against the exact filter, bits; CPU)."""
    lad = window_ladder(make_task("hmm", K=20), LADDER_WINDOWS, n=n)
    return {("history-free" if w == "history-free" else f"w={w}"): v["entropy_mae_bits"]
            for w, v in lad.items()}


def run_paper(device: str, deadline: Deadline, budgets: dict[str, float], work: Path,
              dry: bool) -> tuple[dict[str, Any], pd.DataFrame]:
    """Each run of ``budgets`` (task -> seconds of training) that the deadline still allows
    (a run needs its budget plus :data:`EVAL_ALLOWANCE`); the HMM ladder beside them. A run
    that raises is recorded with its error and the next one still runs."""
    out: dict[str, Any] = {"runs": {}, "skipped": [], "dry_run": dry,
                           "hmm_controls_K20": hmm_ladder(100 if dry else 2000)}
    logs = []
    for task, seconds in budgets.items():
        if deadline.over(seconds + (0 if dry else EVAL_ALLOWANCE)):
            out["skipped"].append(task)
            continue
        try:
            rec, log = train_one(task, device, seconds, work, dry)
        except Exception as e:  # recorded; the session reports the part as failed
            out["runs"][task] = {"error": f"{type(e).__name__}: {' '.join(str(e).split())}",
                                 "traceback": traceback.format_exc(limit=8)[-3000:]}
            out["failed"] = [*out.get("failed", []), task]
            continue
        out["runs"][task] = rec
        logs.append(log)
    return out, (pd.concat(logs, ignore_index=True) if logs else pd.DataFrame())

