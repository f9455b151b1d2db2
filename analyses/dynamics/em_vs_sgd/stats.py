"""The numbers of ``bayesgeom dynamics em-vs-sgd`` from its trained runs: the tuning choice,
per-cell and per-protocol measures, the tests and the verdict (which speed-up survives
tuning), all generated from the runs (:mod:`analyses.dynamics.em_vs_sgd.run` states the
measures)."""

from __future__ import annotations

import math
from dataclasses import asdict, dataclass
from typing import Any

import numpy as np
import pandas as pd
import torch
from scipy import stats

from ....probes.multiple_testing import holm
from ....windtunnel import sticky_chain as sc
from .deep import DEEP_CLIP, DEEP_LR, DEEP_WD
from .protocols import BASELINE, DEEP_LABEL, PILOT_SEED, PROTOCOLS
from .result import Cell, EmVsSgdResult, ProtocolSummary, Trial, Tuning
from .verdict import verdict

ALPHA = 0.05  # the Holm-adjusted level a surviving speed-up must reach


@dataclass
class Run:
    """One trained run: ``losses`` [steps + 1] (after k = 0..steps updates) and its metrics
    (final_loss, entropy, accuracy, train_loss, value, wall_s, s_per_step, reused)."""

    losses: np.ndarray
    metrics: dict[str, Any]


def _loss_key(x: float) -> float:
    return x if np.isfinite(x) else math.inf


def choose(trials: dict[str, dict[float, Run]]) -> dict[str, float]:
    """Protocol -> the grid value with the lowest final pilot loss (a diverged trial, NaN,
    counts as +inf; ties go to the first)."""
    return {p: min(t, key=lambda v: _loss_key(t[v].metrics["final_loss"]))
            for p, t in trials.items()}


def first_below(losses: np.ndarray, threshold: float) -> float:
    """First step (updates done) whose loss is < ``threshold``; NaN if none."""
    hit = np.flatnonzero(losses < threshold)
    return float(hit[0]) if hit.size else math.nan


def _ms(v: list[float]) -> tuple[float, float]:
    a = np.asarray(v, dtype=float)
    if a.size == 0:
        return math.nan, math.nan
    return float(a.mean()), float(a.std(ddof=1)) if a.size > 1 else math.nan


def _tuning(trials: dict[str, dict[float, Run]], chosen: dict[str, float], steps: int,
            ) -> tuple[dict[str, Tuning], list[Trial]]:
    tun, rows = {}, []
    for p, t in trials.items():
        grid = list(t)
        losses = [float(t[v].metrics["final_loss"]) for v in grid]
        rows += [Trial(p, PROTOCOLS[p].param, v, PILOT_SEED, steps, loss,
                       float(t[v].metrics["wall_s"]), v == chosen[p],
                       bool(t[v].metrics["reused"])) for v, loss in zip(grid, losses,
                                                                        strict=True)]
        tun[p] = Tuning(p, PROTOCOLS[p].param, grid, losses, chosen[p],
                        chosen[p] in (grid[0], grid[-1]) and len(grid) > 1,
                        round(sum(float(t[v].metrics["wall_s"]) for v in grid), 2))
    return tun, rows


def _cell(p: str, s: int, r: Run, floor: float, target: float, sgd_mean: float) -> Cell:
    m, deep = r.metrics, p == "deep_adamw"
    to_tuned = math.nan if deep or p == BASELINE else first_below(r.losses, target)
    return Cell(
        protocol=p, seed=s, value=float(m["value"]), steps=len(r.losses) - 1,
        final_loss=m["final_loss"], entropy=m["entropy"], accuracy=m["accuracy"],
        gap_loss=m["final_loss"] - floor, gap_entropy=m["entropy"] - floor,
        steps_to_tuned=to_tuned, wall_to_tuned=to_tuned * float(m["s_per_step"]),
        steps_to_sgd=math.nan if deep else first_below(r.losses, sgd_mean),
        train_loss=m["train_loss"], wall_s=float(m["wall_s"]),
        s_per_step=float(m["s_per_step"]), reused=bool(m["reused"]))


def summarise(p: str, cells: list[Cell], steps: int, base_wall: float,
              test: tuple[float, float, float], label: str, param: str) -> ProtocolSummary:
    """Mean ± sd over seeds of one protocol's ``cells`` with its test numbers (``test`` = t,
    p, Holm p) and speed-ups (``base_wall``: tuned SGD's mean wall time for all steps)."""
    got = {k: _ms([getattr(c, k) for c in cells])
           for k in ("final_loss", "entropy", "accuracy", "gap_loss", "gap_entropy")}

    def conv(k: str) -> tuple[float, float, int, float]:
        hit = [getattr(c, k) for c in cells if np.isfinite(getattr(c, k))]
        m, sd = _ms(hit)
        return m, sd, len(hit), steps / m if len(hit) == len(cells) and m > 0 else math.nan

    tuned, authors = conv("steps_to_tuned"), conv("steps_to_sgd")
    wall = _ms([c.wall_to_tuned for c in cells if np.isfinite(c.wall_to_tuned)])[0]
    all_hit = tuned[2] == len(cells) and p != BASELINE
    s_wall = base_wall / wall if all_hit and wall > 0 else math.nan
    t, pv, ph = test
    survives = (None if p in (BASELINE, "deep_adamw") else bool(
        all_hit and tuned[3] > 1 and s_wall > 1 and t < 0 and ph < ALPHA))
    return ProtocolSummary(
        protocol=p, label=label, param=param, value=cells[0].value if cells else math.nan,
        n_seeds=len(cells),
        **{f"{k}_{s}": v[i] for k, v in got.items() for i, s in enumerate(("mean", "sd"))},
        steps_to_tuned_mean=tuned[0], steps_to_tuned_sd=tuned[1], reached=tuned[2],
        speedup=tuned[3], wall_to_tuned_mean=wall,
        s_per_step=_ms([c.s_per_step for c in cells])[0], speedup_wall=s_wall,
        steps_to_sgd_mean=authors[0], steps_to_sgd_sd=authors[1], reached_sgd=authors[2],
        speedup_sgd=authors[3], t_vs_tuned=t, p_vs_tuned=pv, p_holm=ph, survives=survives)


def _ttest(a: list[float], b: list[float]) -> tuple[float, float]:
    if len(a) < 2 or not (np.all(np.isfinite(a)) and np.all(np.isfinite(b))):
        return math.nan, math.nan
    r = stats.ttest_rel(a, b)
    return float(r.statistic), float(r.pvalue)


def assemble(cfg: Any, trials: dict[str, dict[float, Run]], runs: dict[tuple[str, int], Run],
             tuning_wall: float, threads: int, wall: float,
             ) -> tuple[EmVsSgdResult, dict[str, pd.DataFrame]]:
    """The result and its tables (table.parquet: curves; cells.parquet; tuning.parquet)."""
    seeds, steps, floor = cfg.seed_list(), cfg.n_steps, sc.floor_nats()
    chosen = choose(trials)
    tuning, trial_rows = _tuning(trials, chosen, steps)
    sgd_mean = float(np.mean([runs["sgd", s].metrics["final_loss"] for s in seeds]))
    target = {s: runs[BASELINE, s].metrics["final_loss"] for s in seeds}
    cells = {(p, s): _cell(p, s, r, floor, target.get(s, math.nan), sgd_mean)
             for (p, s), r in runs.items()}
    base = [target[s] for s in seeds]
    tested = [p for p in PROTOCOLS if p != BASELINE]
    tp = {p: _ttest([cells[p, s].final_loss for s in seeds], base) for p in tested}
    adj = holm([tp[p][1] for p in tested])
    tests = {BASELINE: (math.nan,) * 3} | {p: (*tp[p], float(a))
                                           for p, a in zip(tested, adj, strict=True)}
    base_wall = steps * float(np.mean([cells[BASELINE, s].s_per_step for s in seeds]))
    summ = {p: summarise(p, [cells[p, s] for s in seeds], steps, base_wall, tests[p],
                         PROTOCOLS[p].label, PROTOCOLS[p].param) for p in PROTOCOLS}
    deep = [cells["deep_adamw", s] for s in cfg.deep_seed_list()]
    at = _ttest([cells["authors_split", s].final_loss for s in seeds],
                [cells["sgd", s].final_loss for s in seeds])
    p0 = sc.transition_matrix()[0]
    with torch.random.fork_rng(devices=[]):  # building a model to count it draws from the RNG
        deep_params = sc.n_params(sc.DeepStickyTransformer()) if deep else None
    lines, survivors = verdict(summ, tuning, cfg.quick, seeds, steps)
    result = EmVsSgdResult(
        quick=cfg.quick, seeds=seeds, steps=steps, pilot_seed=PILOT_SEED, floor_nats=floor,
        p_row0=p0.tolist(), self_transition=float(p0[0]),
        n_params=sc.n_params(sc.SingleHeadAttention(0)), sgd_final_mean=sgd_mean,
        tuned_sgd_final_mean=float(np.mean(base)),
        settings={"deep_lr": DEEP_LR, "deep_weight_decay": DEEP_WD, "deep_clip": DEEP_CLIP}
        | {p: (chosen[p] if PROTOCOLS[p].tuned else PROTOCOLS[p].fixed) for p in PROTOCOLS},
        tuning=tuning, tuning_wall_s=round(tuning_wall, 2), verdict=lines, survivors=survivors,
        authors_test={"t": at[0], "p": at[1]}, protocols=summ,
        cells=[cells[p, s] for p in PROTOCOLS for s in seeds],
        deep=(summarise("deep_adamw", deep, cfg.deep_steps, math.nan, (math.nan,) * 3,
                        DEEP_LABEL, "") if deep else None),
        deep_cells=deep, deep_n_params=deep_params,
        deep_steps=cfg.deep_steps if deep else None, notes=NOTES, references=REFERENCES,
        threads=threads, wall_s=round(wall, 2))
    labels = {**{p: PROTOCOLS[p].label for p in PROTOCOLS}, "deep_adamw": DEEP_LABEL}
    curves = pd.DataFrame([{"protocol": p, "label": labels[p], "seed": s, "step": k,
                            "loss": float(v)} for (p, s), r in runs.items()
                           for k, v in enumerate(r.losses)])
    table = pd.DataFrame([asdict(c) for c in cells.values()]).assign(
        label=lambda d: d["protocol"].map(labels))
    return result, {"table.parquet": curves, "cells.parquet": table,
                    "tuning.parquet": pd.DataFrame([asdict(t) for t in trial_rows])}


#: what the paper and the authors' code report, printed beside our numbers
REFERENCES = {
    "paper": "paper/README: EM-like schedule 2.3x faster (430 vs 1000 steps)",
    "authors_code": ("authors' code as measured for issue 13: the learning-rate split reaches "
                     "SGD's final loss in 458 +/- 164 steps vs 1,000 (2.2x); final loss 1.932 "
                     "vs 2.031; floor 1.829 nats"),
}
NOTES = [
    "em_closed_form is our construction of the abstract's closed-form EM update (spec [INF]), "
    "not the authors' code; authors_split is what their code runs under the name EM-like",
    "tuned protocols: the grid value with the lowest final loss on pilot seed 1 at the full "
    "step count, then run unchanged on the evaluation seeds; sgd and authors_split untuned",
    "wall time to a loss = steps to it × the protocol's seconds per step measured in this run "
    "(batched training: a batch's time shared equally by its runs)",
    "deep variant: metrics on the held-out sequence (seed + 10000) with dropout off; the "
    "authors' code evaluates with dropout on and labels the nats gap 'bits'; its last loss "
    "point is the final training loss with dropout off",
]
