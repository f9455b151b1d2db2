"""``bayesgeom dynamics em-vs-sgd``: EM-like vs SGD training of one attention head on the
sticky Markov chain (Paper II, spec §2.3; data and models: :mod:`windtunnel.sticky_chain`),
against tuned baselines.

For each seed (the first N of the authors' 42, 2024, 1337, 7777, 9999) the seed's sequence
(T = 2000, 1999 positions) is fitted full batch for ``steps`` steps (CE in nats, no momentum
unless Adam) from the same seeded initialisation by each protocol of
:mod:`analyses.dynamics.em_vs_sgd.protocols`: the authors' two (SGD at lr 0.01 and their
learning-rate split, untuned, as they ran them) and seven tuned ones (SGD, values ×k, output
×k, Adam, the closed-form M-step and its two ablations).

**Tuning.** Each tuned protocol is trained on the pilot seed 1 (not an evaluation seed) at
every value of its declared grid (the same number of trials for every tuned protocol, the EM
η included), for the full step count; the value with the lowest final pilot loss is used on
the evaluation seeds. The grid, every trial's pilot loss, the choice and the wall time go
into the result and ``tuning.parquet``.

**Measures.** The loss curve holds the loss after k updates, k = 0..steps. Metrics of the
final model on the training sequence: loss, mean predictive entropy, accuracy, loss − H_min,
entropy − H_min. Against tuned SGD (the baseline): the first step at which a protocol's loss
falls below the same seed's final tuned-SGD loss, and the wall time to it (steps × the
protocol's measured seconds per step in this run); speed-up = steps / mean steps (and tuned
SGD's full wall time / mean wall time) when every seed reached it; paired t-tests
(``scipy.stats.ttest_rel``) of the final losses against tuned SGD's, Holm over the protocols
(:func:`probes.multiple_testing.holm`). The authors' measure (steps to the mean final loss of
SGD at lr 0.01) is kept beside it. The verdict -- which speed-up survives tuning -- is
generated from these numbers (:mod:`analyses.dynamics.em_vs_sgd.stats`).

Training runs batched (:mod:`.sticky_trainer`: a protocol's grid trials, or its seeds,
stacked along a batch dimension, hand-written gradients, tested against the plain autograd
loop of :mod:`.reference`). ``--quick``: 2 seeds, 150
steps, 3-point grids -- a smoke run, labelled "quick: not a result".

``--deep``: :mod:`analyses.dynamics.em_vs_sgd.deep`. Every finished trial and (protocol,
seed) cell is kept under ``<out>/cells`` (:class:`records.Parts`) and reused by a rerun with
the same settings.
"""

from __future__ import annotations

import math
import time
from pathlib import Path

import torch

from ....records import Parts, fingerprint
from ....records.options import expect_config
from ....records.progress import tqdm
from ....windtunnel import sticky_chain as sc
from ...kit.out_dirs import claim
from ...kit.writer import write_run
from .budget import check_budget
from .config import QUICK_SEEDS, QUICK_STEPS, EmVsSgdConfig  # noqa: F401 (re-exported)
from .deep import DEEP_CLIP, DEEP_LR, DEEP_WD, final_metrics, train_deep
from .protocols import PILOT_SEED, PROTOCOLS, Protocol
from .report import write_report
from .result import EmVsSgdResult
from .stats import Run, assemble, choose
from .sticky_trainer import CHUNK, train_batch

CELL_VERSION = 3  # bump when a cell's computation changes


def _fp(proto: Protocol, value: float, seed: int, steps: int) -> str:
    return fingerprint("em-vs-sgd", CELL_VERSION, proto.name, seed, steps, value,
                       proto.settings(value), CHUNK)


def _floats(metrics: dict) -> dict:
    """A cell's stored metrics with JSON's null (a NaN when written: a diverged run) as NaN."""
    return {k: math.nan if v is None else v for k, v in metrics.items()}


def run_group(proto: Protocol, cells: list[tuple[str, int, float]], steps: int, parts: Parts,
              bar: tqdm) -> dict[str, Run]:
    """Train the cells (name, seed, value) of one protocol -- those not finished in ``parts``
    -- as one batch; name -> :class:`Run`. A trained cell's wall time is the batch's divided
    by its size."""
    out: dict[str, Run] = {}
    todo = []
    for name, seed, value in cells:
        got = parts.get(name, _fp(proto, value, seed, steps))
        if got is None:
            todo.append((name, seed, value))
            continue
        bar.update(steps)
        out[name] = Run(got["losses"], {**_floats(got["metrics"]), "reused": True})
    if todo:
        bar.set_postfix_str(proto.name)
        seqs = {s: sc.make_sequence(s) for s in {s for _, s, _ in todo}}
        t0 = time.perf_counter()
        res = train_batch([seqs[s] for _, s, _ in todo], [proto.settings(v) for *_, v in todo],
                          steps, bar)
        wall = (time.perf_counter() - t0) / len(todo)
        for i, (name, seed, value) in enumerate(todo):
            m = final_metrics(res.final_logits[i], seqs[seed].targets)
            m = {**m, "train_loss": m["final_loss"], "value": value, "wall_s": round(wall, 3),
                 "s_per_step": wall / steps}
            parts.put(name, _fp(proto, value, seed, steps), losses=res.losses[i], metrics=m)
            out[name] = Run(res.losses[i], {**m, "reused": False})
    return out


def tune(cfg: EmVsSgdConfig, parts: Parts, bar: tqdm) -> dict[str, dict[float, Run]]:
    """Every tuned protocol's trials on the pilot seed: protocol -> value -> :class:`Run`."""
    out = {}
    for p in PROTOCOLS.values():
        if p.tuned:
            grid = p.trials(cfg.quick)
            runs = run_group(p, [(f"pilot-{p.name}-{v:g}", PILOT_SEED, v) for v in grid],
                             cfg.n_steps, parts, bar)
            out[p.name] = {v: runs[f"pilot-{p.name}-{v:g}"] for v in grid}
    return out


def evaluate(cfg: EmVsSgdConfig, chosen: dict[str, float], parts: Parts, bar: tqdm,
             ) -> dict[tuple[str, int], Run]:
    """Every protocol at its chosen (or fixed) value on every seed: (protocol, seed) -> Run."""
    out = {}
    for p in PROTOCOLS.values():
        v = chosen[p.name] if p.tuned else p.fixed
        runs = run_group(p, [(f"{p.name}-seed{s}", s, v) for s in cfg.seed_list()],
                         cfg.n_steps, parts, bar)
        out |= {(p.name, s): runs[f"{p.name}-seed{s}"] for s in cfg.seed_list()}
    return out


def run_deep(seed: int, cfg: EmVsSgdConfig, parts: Parts, bar: tqdm) -> Run:
    """The deep variant on ``seed``, reused from ``parts`` when finished."""
    name = f"deep_adamw-seed{seed}"
    fp = fingerprint("em-vs-sgd", CELL_VERSION, "deep_adamw", seed, cfg.deep_steps, DEEP_LR,
                     DEEP_WD, DEEP_CLIP)
    got = parts.get(name, fp)
    if got is not None:
        bar.update(cfg.deep_steps)
        return Run(got["losses"], {**_floats(got["metrics"]), "reused": True})
    t0 = time.perf_counter()
    losses, m, train_loss = train_deep(seed, cfg.deep_steps, bar)
    wall = time.perf_counter() - t0
    m = {**m, "train_loss": train_loss, "value": DEEP_LR, "wall_s": round(wall, 2),
         "s_per_step": wall / cfg.deep_steps}
    parts.put(name, fp, losses=losses, metrics=m)
    return Run(losses, {**m, "reused": False})


def run_em_vs_sgd(cfg: EmVsSgdConfig) -> EmVsSgdResult:
    """Run the experiment (module doc); write table.parquet (loss curves: protocol, seed, step,
    loss), cells.parquet, tuning.parquet, summary.json, manifest.json and report.html under
    ``cfg.out``."""
    expect_config(cfg, EmVsSgdConfig, "run_em_vs_sgd")
    cfg.check()
    check_budget(cfg)  # the time of one step, before the run folder is claimed
    t0 = time.perf_counter()
    seeds = cfg.seed_list()
    n_tuned = sum(len(p.trials(cfg.quick)) for p in PROTOCOLS.values() if p.tuned)
    total = (n_tuned + len(PROTOCOLS) * len(seeds)) * cfg.n_steps + len(
        cfg.deep_seed_list()) * cfg.deep_steps
    with claim(cfg) as rd:
        parts = Parts(Path(cfg.out) / "cells")
        with tqdm(total=total, desc="em-vs-sgd", unit="step", disable=not cfg.progress) as bar:
            trials = tune(cfg, parts, bar)
            tuning_wall = time.perf_counter() - t0
            runs = evaluate(cfg, choose(trials), parts, bar)
            for s in cfg.deep_seed_list():
                bar.set_postfix_str(f"deep seed {s}")
                runs["deep_adamw", s] = run_deep(s, cfg, parts, bar)
        result, tables = assemble(cfg, trials, runs, tuning_wall, torch.get_num_threads(),
                                  time.perf_counter() - t0)
        write_run(cfg, result, seed=seeds[0], seeds=seeds, pilot_seed=PILOT_SEED,
                  seeding="torch.Generator per the authors' code (windtunnel.sticky_chain)",
                  tables=tables,
                  report=lambda path, manifest: write_report(path, result, tables["table.parquet"],
                                                             tables["cells.parquet"],
                                                             tables["tuning.parquet"], manifest))
        rd.finish()
    return result

