"""``bayesgeom demo``: the main job, offline, on a CPU.

1. Wind tunnel: train the small transformer on bijection elimination (V = 20) and the MLP
   baselines for the same wall time; evaluate all against the exact posterior.
2. Small vs large (:mod:`analyses.compare`): the geometry pipeline on the wind tunnel (its task)
   and on the LLM (embedded SmolLM2 by default) over the mixed set and one domain set (math when
   its corpus is installed), side by side.
3. SULA (:mod:`analyses.sula`): the LLM's in-context calibration against the exact posterior,
   with the lexical-remap, shuffled-label and evidence-ablation controls.
4. Steering (:mod:`analyses.steering`): cut / keep-only / shift the last-layer entropy axis of
   the LLM on SULA prompts, against norm-matched orthogonal random directions, total and direct.
5. The same steering experiment on the wind-tunnel transformer, scored against the exact
   posterior.

Everything lands under ``out`` (one folder per step, each with its own tables, summary, manifest
and report) plus ``report.html`` (all figures and tables, plotly embedded: opens offline),
``summary.json``, ``headline.parquet``, ``table.parquet`` (the wind-tunnel training table) and
``manifest.json``. A rerun reuses trained checkpoints, scored pools, finished geometry runs, SULA
scores and finished steering conditions. ``quick`` shrinks every step for CI.
"""

from __future__ import annotations

import json
import time
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

import pandas as pd
import plotly.graph_objects as go

import interp
from analyses import compare, steering, steering_report, sula
from analyses.corpora import CorpusPaths
from analyses.prompt_pool import MIXED, PoolConfig, build_pool
from analyses.report import html_report
from windtunnel.artifacts import run_manifest, write_json, write_table
from windtunnel.training import TrainConfig, TrainResult, train

#: domain sets tried, in order, for the domain-restricted geometry (the first one installed)
DOMAIN_PREFERENCE = ("math", "code", "legal", "literature", "news")


@dataclass
class DemoSizes:
    """How big each step is (``DemoConfig.sizes()`` picks full or quick)."""

    transformer_steps: int
    n_per_quintile: int
    pool_size: int
    n_resamples: int
    curve_resamples: int
    sula_per_k: int
    steer_per_k: int
    cut_fractions: tuple[float, ...]
    shift_deltas: tuple[float, ...]
    n_random: int
    windtunnel_prompts: int


FULL = DemoSizes(3000, 15, 1000, 1000, 200, 50, 30, (0.25, 0.5, 1.0), (-1.0, 1.0), 20, 250)
QUICK = DemoSizes(400, 4, 120, 100, 20, 8, 8, (1.0,), (1.0,), 10, 64)


@dataclass
class DemoConfig:
    """The main job. ``model``: the LLM (Hub name or local directory; None = embedded
    SmolLM2). ``corpus_paths``: where corpora are looked up (None: the defaults)."""

    out: Path = Path("runs/demo")
    quick: bool = False
    model: str | None = None
    seed: int = 0
    baselines: tuple[str, ...] = ("mlp-position", "mlp-flat")
    progress: bool = True
    preset: str = "small"
    task_params: dict = field(default_factory=lambda: {"V": 20})
    full: DemoSizes = field(default_factory=lambda: FULL)
    quick_sizes: DemoSizes = field(default_factory=lambda: QUICK)
    corpus_paths: CorpusPaths | None = None

    def sizes(self) -> DemoSizes:
        return self.quick_sizes if self.quick else self.full

    def to_dict(self) -> dict[str, Any]:
        d = asdict(self) | {"out": str(self.out)}
        d["corpus_paths"] = None if self.corpus_paths is None else str(self.corpus_paths)
        return d


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


def _row(res: TrainResult, arch: str) -> dict[str, Any]:
    summ = json.loads((res.out / "eval.json").read_text())
    return {"arch": arch, "params": summ["params"], "steps": res.steps_done,
            "wall_s": round(res.wall_s, 1), "entropy_mae_bits": summ["entropy_mae_bits"],
            "entropy_mae_curve_bits": summ["entropy_mae_curve_bits"],
            "kl_bits": summ["kl_bits"], "tvd": summ["tvd"], "accuracy": summ["accuracy"]}


def train_windtunnels(c: DemoConfig, out: Path) -> dict[str, TrainResult]:
    runs: dict[str, TrainResult] = {}
    runs["transformer"] = train(_transformer_cfg(c), out / "transformer", progress=c.progress)
    wall = runs["transformer"].wall_s
    for i, arch in enumerate(c.baselines):
        _say(f"      training the {arch} baseline for the same wall time ({wall:.0f} s) "
             f"[{i + 1}/{len(c.baselines)}]")
        runs[arch] = train(_baseline_cfg(c, arch, wall), out / arch, progress=c.progress)
    return runs


def windtunnel_figures(runs: dict[str, TrainResult]) -> tuple[go.Figure, go.Figure]:
    fig_h = go.Figure()
    bayes = runs["transformer"].report.per_position["h_bayes_bits"]
    fig_h.add_scatter(y=bayes, name="exact Bayes", mode="lines+markers")
    for a, r in runs.items():
        fig_h.add_scatter(y=r.report.per_position["h_model_bits"], name=a, mode="lines",
                          line={"dash": "dash"})
    fig_h.update_layout(xaxis_title="key position k", yaxis_title="predictive entropy (bits)",
                        template="plotly_white")
    fig_l = go.Figure()
    for a, r in runs.items():
        ev = r.log.dropna(subset=["eval_entropy_mae_bits"])
        fig_l.add_scatter(x=ev["elapsed_s"], y=ev["eval_entropy_mae_bits"], name=a,
                          mode="lines+markers")
    fig_l.update_layout(xaxis_title="training wall time (s)", yaxis_title="entropy MAE (bits)",
                        yaxis_type="log", template="plotly_white")
    return fig_h, fig_l


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
                                seed=c.seed, progress=c.progress)


def run_demo(c: DemoConfig) -> dict[str, Any]:
    """Run every step (module doc); print a short summary and return ``summary.json``."""
    t0 = time.perf_counter()
    out = Path(c.out)
    out.mkdir(parents=True, exist_ok=True)
    s = c.sizes()
    clock: dict[str, float] = {}

    def lap(name: str, since: float) -> float:
        clock[name] = round(time.perf_counter() - since, 1)
        return time.perf_counter()

    t = time.perf_counter()
    V = c.task_params.get("V", 20)
    _say(f"[1/5] wind tunnel: training the small transformer on bijection elimination (V = {V})")
    runs = train_windtunnels(c, out / "windtunnel")
    wt_table = pd.DataFrame([_row(r, a) for a, r in runs.items()])
    wt_dir = str(out / "windtunnel" / "transformer")
    t = lap("windtunnel_training", t)

    _say("[2/5] small vs large: geometry of the wind tunnel and the LLM")
    llm = interp.load(c.model)
    wt = interp.load(wt_dir)
    domain = domain_set(c.corpus_paths, c.seed)
    prompts = (MIXED,) if domain is None else (MIXED, domain)
    ccfg = compare.CompareConfig(
        models=(wt_dir, c.model), labels=("windtunnel", "llm"), out=out / "compare",
        prompts=prompts, n_per_quintile=s.n_per_quintile, pool_size=s.pool_size,
        n_resamples=s.n_resamples, curve_resamples=s.curve_resamples, seed=c.seed,
        progress=c.progress, corpus_paths=c.corpus_paths)
    cmp = compare.run_compare(ccfg, models=[wt, llm])
    t = lap("compare", t)

    _say("[3/5] SULA: in-context calibration against the exact posterior, with controls")
    scfg = sula.SulaConfig(model=c.model, out=out / "sula", n_per_k=s.sula_per_k,
                           progress=c.progress)
    sula_s = sula.run_sula(scfg, model=llm)
    t = lap("sula", t)

    _say("[4/5] steering the LLM's entropy axis (SULA prompts) against random directions")
    steer_llm = steering.run_steer(_steer_cfg(c, out / "steer-llm", c.model), model=llm)
    t = lap("steer_llm", t)

    _say("[5/5] steering the wind-tunnel transformer, scored against the exact posterior")
    steer_wt = steering.run_steer(_steer_cfg(c, out / "steer-windtunnel", wt_dir), model=wt)
    t = lap("steer_windtunnel", t)

    headline = headline_table(wt_table, cmp, sula_s, steer_llm, steer_wt)
    clock["total"] = round(time.perf_counter() - t0, 1)
    summary = {
        "windtunnel": {"task": "bijection", "V": V, "rows": wt_table.to_dict("records")},
        "compare": {"labels": cmp["labels"], "metrics": cmp["metrics"],
                    "prompt_sets": list(prompts)},
        "sula": {"model": sula_s["model"], "labels": sula_s["labels"],
                 "conditions": {k: {m: v[m] for m in ("mae", "corr", "label_mass",
                                                      "abs_rho_pc1_h_bayes")}
                                for k, v in sula_s["conditions"].items()},
                 "paper3_mae_bits": sula_s["paper3_mae_bits"]},
        "steer_llm": {"clean": steer_llm["clean"], "headline": steer_llm["headline"]},
        "steer_windtunnel": {"clean": steer_wt["clean"], "headline": steer_wt["headline"]},
        "timings_s": clock,
        "quick": c.quick,
    }
    manifest = run_manifest(seed=c.seed, dtype=llm.info.dtype, model=llm.info.to_dict(),
                            windtunnel_model=wt.info.to_dict(), demo=c.to_dict())
    write_table(out / "table.parquet", wt_table)
    write_table(out / "headline.parquet", headline)
    write_json(out / "manifest.json", manifest)
    write_json(out / "summary.json", summary)
    write_report(out, runs, wt_table, headline, sula_s, steer_llm, steer_wt, manifest, V)
    text = format_summary(wt_table, sula_s, steer_llm, steer_wt, out)
    print(text)
    print(f"report: {out / 'report.html'}  ({clock['total']:.0f} s)")
    return json.loads(json.dumps(summary, default=float))


def _say(msg: str) -> None:
    print(msg, flush=True)


# ---------------------------------------------------------------- outputs
_STEER_METRICS = ("d_mae", "d_kl_bayes", "kl_clean", "top1_flip", "d_axis_corr")


def headline_table(wt_table: pd.DataFrame, cmp: dict[str, Any], sula_s: dict[str, Any],
                   steer_llm: dict[str, Any], steer_wt: dict[str, Any]) -> pd.DataFrame:
    """Tidy headline numbers: section, subject, condition, metric, value, p (NaN if none)."""
    rows: list[dict[str, Any]] = []

    def add(section: str, subject: str, cond: str, metric: str, value: Any,
            p: Any = None) -> None:
        rows.append({"section": section, "subject": subject, "condition": cond,
                     "metric": metric, "value": _f(value), "p": _f(p)})

    for r in wt_table.to_dict("records"):
        for m in ("entropy_mae_bits", "kl_bits", "accuracy"):
            add("windtunnel", r["arch"], "", m, r[m])
    for label, mets in cmp["metrics"].items():
        for k, v in mets.items():
            add("compare", label, k.split(".")[0], k.split(".", 1)[1], v)
    for cond, v in sula_s["conditions"].items():
        for m in ("mae", "corr", "label_mass", "abs_rho_pc1_h_bayes"):
            add("sula", sula_s["model"], cond, m, v[m])
    for name, st in (("steer_llm", steer_llm), ("steer_windtunnel", steer_wt)):
        for cond, effs in st["headline"].items():
            for eff, mets in effs.items():
                for m in _STEER_METRICS:
                    if m in mets:
                        add(name, st["model"], f"{cond} ({eff})", m, mets[m]["axis"],
                            mets[m]["p"])
    return pd.DataFrame(rows)


def _f(x: Any) -> float:
    return float("nan") if x is None else float(x)


def write_report(out: Path, runs: dict[str, TrainResult], wt_table: pd.DataFrame,
                 headline: pd.DataFrame, sula_s: dict[str, Any], steer_llm: dict[str, Any],
                 steer_wt: dict[str, Any], manifest: dict[str, Any], V: int) -> Path:
    fig_h, fig_l = windtunnel_figures(runs)
    cmp_curves = pd.read_parquet(out / "compare" / "curves.parquet")
    cmp_table = pd.read_parquet(out / "compare" / "table.parquet")
    wide = pd.read_csv(out / "compare" / "side_by_side.csv")
    per_k = pd.read_parquet(out / "sula" / "per_k.parquet")
    sections: list[tuple[str, object]] = [
        (f"1. Wind tunnel: bijection elimination, V = {V}", wt_table),
        ("Entropy calibration per position (held-out)", fig_h),
        ("Held-out entropy MAE during training", fig_l),
        ("2. Small vs large: the same geometry metrics (final layer)", wide),
        ("Final-layer metrics", compare.bars_figure(cmp_table)),
        ("Per-layer curves on normalised depth", compare.curves_figure(cmp_curves)),
        (f"3. SULA on {sula_s['model']}", sula.format_summary(sula_s)),
        ("SULA entropy per k (model vs exact Bayes)", sula.calibration_figure(per_k)),
        ("SULA per k", per_k),
    ]
    for title, st, d in (("4. Steering the LLM's entropy axis", steer_llm, out / "steer-llm"),
                         ("5. Steering the wind tunnel's entropy axis", steer_wt,
                          out / "steer-windtunnel")):
        table = pd.read_parquet(d / "table.parquet")
        effects = pd.read_parquet(d / "effects.parquet")
        sections += [
            (title, steering.format_summary(st)),
            ("Dose–response against random directions", steering_report.dose_response(table)),
            (f"Entropy per {st['group_name']}", steering_report.per_group(table, st)),
            ("Effects and p-values", steering_report.effects_view(effects)),
        ]
    sections.append(("Headline numbers (headline.parquet)", headline))
    sections.append(("Step reports", "; ".join(
        str(out / p / "report.html") for p in ("compare", "compare/windtunnel", "compare/llm",
                                               "sula", "steer-llm", "steer-windtunnel"))))
    return html_report(out / "report.html", "bayesgeom demo", sections, manifest)


def format_summary(wt_table: pd.DataFrame, sula_s: dict[str, Any], steer_llm: dict[str, Any],
                   steer_wt: dict[str, Any], out: Path) -> str:
    with pd.option_context("display.float_format", lambda x: f"{x:.4g}", "display.width", 120):
        wt = wt_table.to_string(index=False)
    wide = pd.read_csv(out / "compare" / "side_by_side.csv")
    return "\n\n".join([
        "== wind tunnel (entropy MAE vs the exact posterior, bits)\n" + wt,
        "== small vs large (final layer)\n" + compare.format_summary({}, wide),
        "== SULA\n" + sula.format_summary(sula_s),
        "== steering the LLM\n" + steering.format_summary(steer_llm),
        "== steering the wind tunnel\n" + steering.format_summary(steer_wt),
    ])
