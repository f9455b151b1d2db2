"""``bayesgeom demo``: the main job, offline, on a CPU.

1. Wind tunnels: train the small transformer on bijection elimination (V = 20) and the MLP
   baselines for the same wall time, and evaluate all against the exact posterior; then train
   the small transformer on HMM filtering (S = O = 5, K = 20), the tunnel whose Bayes entropy
   varies at a fixed position. (On bijection without replacement the entropy at the k-th key
   is log2(V − k + 1), a function of position alone: its geometry would measure position, and
   the geometry run says so.)
2. Small vs large (:mod:`analyses.compare.run`): the geometry pipeline on both wind tunnels (their
   tasks) and on the LLM (embedded SmolLM2 by default) over the mixed set and one domain set
   (math when its corpus is installed), side by side, every number beside the same analysis
   at random initialisation and a position-only predictor.
3. SULA (:mod:`analyses.sula.run`): the LLM's in-context calibration against the exact posterior,
   with the lexical-remap, shuffled-label and evidence-ablation controls.
4. Steering (:mod:`analyses.steer.run`): a full cut, keep-only and a +1σ shift of the last-layer
   entropy axis of the LLM on SULA prompts, against 60 control directions carrying the axis'
   energy where the edits are applied (enough for the three primary tests to survive Holm),
   with their effective number, the energy each edit moved and Holm-adjusted p-values.
5. The same steering experiment on the HMM wind tunnel, scored against the exact posterior on
   its trained (hypothesis) logits.

Everything lands under ``out`` (one folder per step, each with its own tables, summary, manifest
and report) plus ``report.html`` (all figures and tables, plotly embedded: opens offline),
``summary.json`` (the :class:`DemoResult`), ``headline.parquet``, ``table.parquet`` (the
wind-tunnel training table) and ``manifest.json``. A rerun reuses trained checkpoints, scored
pools, finished geometry runs, SULA scores and finished steering conditions. ``quick`` shrinks
every step for CI.
"""

from __future__ import annotations

import time
from dataclasses import asdict
from pathlib import Path

import pandas as pd

from ... import interp
from ...records.options import expect_config
from ...windtunnel import make_task
from ...windtunnel.hmm import window_ladder
from ...windtunnel.training import TrainConfig, TrainResult, train
from ..compare import run as compare
from ..geometry.run import GeometryConfig
from ..kit.models import open_model
from ..kit.out_dirs import claim
from ..kit.writer import write_run
from ..prompts.corpora import CorpusPaths
from ..prompts.pool import MIXED, PoolConfig, build_pool
from ..steer import run as steering
from ..sula import run as sula
from .config import FULL, QUICK, STANDARD, DemoConfig, DemoSizes  # noqa: F401 (re-exported)
from .result import DemoResult, TrainRow

#: domain sets tried, in order, for the domain-restricted geometry (the first one installed)
DOMAIN_PREFERENCE = ("math", "code", "legal", "literature", "news")


# ---------------------------------------------------------------- 1. wind tunnel
def _transformer_cfg(c: DemoConfig) -> TrainConfig:
    steps = c.sizes().transformer_steps
    return TrainConfig(task="bijection", task_params=c.task_params, arch="transformer",
                       preset=c.preset, steps=steps, seed=c.seed,
                       eval_every=max(100, steps // 8), ckpt_every=max(100, steps // 4),
                       warmup_steps=min(200, steps // 10))


def _baseline_cfg(c: DemoConfig, arch: str, wall_s: float) -> TrainConfig:
    return TrainConfig(task="bijection", task_params=c.task_params, arch=arch, preset=c.preset,
                       steps=1_000_000, seed=c.seed, eval_every=500, ckpt_every=1000,
                       warmup_steps=200, max_minutes=max(0.001, round(wall_s / 60.0, 3)))


def _hmm_cfg(c: DemoConfig) -> TrainConfig:
    steps = c.sizes().hmm_steps
    return TrainConfig(task="hmm", task_params=c.hmm_params, arch="transformer",
                       preset=c.preset, steps=steps, seed=c.seed, batch_size=64,
                       eval_every=max(100, steps // 6), ckpt_every=max(100, steps // 3),
                       warmup_steps=min(200, steps // 10))


def train_row(res: TrainResult, arch: str) -> TrainRow:
    r = res.report
    assert r is not None
    return TrainRow(arch, res.params, res.steps_done, round(res.wall_s, 1), r.entropy_mae_bits,
                    r.entropy_mae_curve_bits, r.kl_bits, r.tvd, r.accuracy)


def train_windtunnels(c: DemoConfig, out: Path) -> dict[str, TrainResult]:
    runs = {"transformer": train(_transformer_cfg(c), out / "transformer", progress=c.progress,
                                 restart=c.restart)}
    wall = runs["transformer"].wall_s
    for i, arch in enumerate(c.baselines):
        _say(f"      training the {arch} baseline for the same wall time ({wall:.0f} s) "
             f"[{i + 1}/{len(c.baselines)}]")
        runs[arch] = train(_baseline_cfg(c, arch, wall), out / arch, progress=c.progress,
                           restart=c.restart)
    return runs


#: the windows of the HMM control ladder the demo reports
HMM_WINDOWS = (2, 3, 4)


def hmm_controls(c: DemoConfig) -> dict[str, float]:
    """The HMM transformer's controls, on the very held-out sequences its final evaluation
    scored (same seed and count): the history-free filter and the last-w-observations filters
    (:func:`windtunnel.hmm.window_ladder`), entropy MAE in bits."""
    cfg = _hmm_cfg(c)
    ladder = window_ladder(make_task("hmm", **cfg.task_params), HMM_WINDOWS,
                           n=cfg.final_eval_size, seed=cfg.seed)
    return {("history-free" if w == "history-free" else f"window {w}"):
            round(float(v["entropy_mae_bits"]), 6) for w, v in ladder.items()}


# ---------------------------------------------------------------- 2–5. the LLM and steering
def domain_set(paths: CorpusPaths | None, seed: int) -> str | None:
    """The first installed domain of :data:`DOMAIN_PREFERENCE` (None: only the mixed set)."""
    pool = build_pool(PoolConfig(size=50, seed=seed), paths=paths)
    return next((d for d in DOMAIN_PREFERENCE if d in pool.domains), None)


def _steer_cfg(c: DemoConfig, out: Path, model: str | None) -> steering.SteerConfig:
    s = c.sizes()
    return steering.SteerConfig(model=model, out=out, cut_fractions=s.cut_fractions,
                                shift_deltas=s.shift_deltas, n_random=s.n_random,
                                n_per_k=s.steer_per_k, n_prompts=s.windtunnel_prompts,
                                norm_frozen=False, quick=c.quick, seed=c.seed,
                                progress=c.progress, restart=c.restart)


def run_demo(c: DemoConfig) -> DemoResult:
    """Run every step (module doc), announcing each, and return the typed result (its
    terminal summary is :func:`analyses.demo.report.format_summary`)."""
    t0 = time.perf_counter()
    expect_config(c, DemoConfig, "run_demo")
    c.check()
    llm = open_model(c.model, allow_pickle=c.allow_pickle)  # a bad --model fails first
    with claim(c) as rd:
        result = _demo(c, llm, rd.out, t0)
        rd.finish()
    return result


def _demo(c: DemoConfig, llm: interp.InterpModel, out: Path, t0: float) -> DemoResult:
    s = c.sizes()
    clock: dict[str, float] = {}

    def lap(name: str, since: float) -> float:
        clock[name] = round(time.perf_counter() - since, 1)
        return time.perf_counter()

    t = time.perf_counter()
    V = c.task_params.get("V", 20)
    _say(f"[1/5] wind tunnels: training the small transformer on bijection elimination "
         f"(V = {V}), then on HMM filtering")
    runs = train_windtunnels(c, out / "windtunnel")
    bij_dir = str(out / "windtunnel" / "transformer")
    hmm = train(_hmm_cfg(c), out / "windtunnel" / "hmm-transformer", progress=c.progress,
                restart=c.restart)
    hmm_dir = str(out / "windtunnel" / "hmm-transformer")
    controls = hmm_controls(c)
    t = lap("windtunnel_training", t)

    _say("[2/5] small vs large: geometry of the wind tunnels and the LLM, beside their controls")
    wt = open_model(hmm_dir)
    domain = domain_set(c.corpus_paths, c.seed)
    prompts = (MIXED,) if domain is None else (MIXED, domain)
    geo = GeometryConfig(prompts=prompts, n_per_quintile=s.n_per_quintile,
                         pool_size=s.pool_size, n_resamples=s.n_resamples,
                         curve_resamples=s.curve_resamples, seed=c.seed, progress=c.progress,
                         corpus_paths=c.corpus_paths)
    cmp = compare.run_compare(compare.CompareConfig(
        models=(bij_dir, hmm_dir, c.model), labels=("bijection", "hmm", "llm"),
        out=out / "compare", geometry=geo, restart=c.restart), models=[None, wt, llm])
    t = lap("compare", t)

    _say("[3/5] SULA: in-context calibration against the exact posterior, with controls")
    sula_s = sula.run_sula(sula.SulaConfig(model=c.model, out=out / "sula", n_per_k=s.sula_per_k,
                                           progress=c.progress, restart=c.restart), model=llm)
    t = lap("sula", t)

    _say("[4/5] steering the LLM's entropy axis (SULA prompts) against control directions")
    steer_llm = steering.run_steer(_steer_cfg(c, out / "steer-llm", c.model), model=llm)
    t = lap("steer_llm", t)

    _say("[5/5] steering the HMM wind tunnel, scored against the exact posterior")
    steer_wt = steering.run_steer(_steer_cfg(c, out / "steer-windtunnel", hmm_dir), model=wt)
    t = lap("steer_windtunnel", t)

    clock["total"] = round(time.perf_counter() - t0, 1)
    result = DemoResult(task="bijection", V=V,
                        windtunnel=[train_row(r, a) for a, r in runs.items()],
                        hmm=train_row(hmm, "transformer"),
                        prompt_sets=list(prompts), compare=cmp, sula=sula_s,
                        steer_llm=steer_llm, steer_windtunnel=steer_wt, timings_s=clock,
                        quick=c.quick, hmm_controls=controls)
    from .report import headline_table, write_report

    write_run(c, result, model=llm, windtunnel_model=wt.info.to_dict(),
              tables={"table.parquet": pd.DataFrame([asdict(r) for r in result.windtunnel]),
                      "headline.parquet": headline_table(result)},
              report=lambda path, manifest: write_report(path.parent, result, runs, manifest))
    return result


def _say(msg: str) -> None:
    print(msg, flush=True)
