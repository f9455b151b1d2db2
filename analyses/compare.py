"""``bayesgeom compare``: the same geometry metrics on several models, side by side.

Every model — a wind-tunnel run directory, a Hub name, a local directory or the embedded SmolLM2 —
goes through :func:`analyses.geometry.run_geometry` unchanged (its own prompt sets: ``task`` for
a wind tunnel, ``prompts`` for a text model) into ``out/<label>/``. The comparison then reads the
same fields from each summary: value-manifold PC1 and PC1+PC2 shares (standardised, final
layer, bootstrap CIs), Spearman ρ(PC1, entropy), the entropy-probe R², weight-based key
orthogonality, attention focusing and Paper III's criteria; and the per-layer curves on a
depth axis normalised to [0, 1], so models of different depth line up.

Writes ``table.parquet`` (tidy: label, model, prompt_set, metric, value, low, high),
``side_by_side.csv`` (metrics × model columns), ``curves.parquet``, ``summary.json``,
``manifest.json`` and ``report.html``. A model whose run directory already holds a finished
geometry run with the same configuration and weights is not rerun.
"""

from __future__ import annotations

import hashlib
import json
import time
from collections.abc import Sequence
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

import pandas as pd
import plotly.graph_objects as go
from plotly.subplots import make_subplots

import interp
from analyses.corpora import CorpusPaths
from analyses.geometry import GeometryConfig, run_geometry, weights_fingerprint
from analyses.report import html_report
from windtunnel.artifacts import run_manifest, write_json, write_table

#: name on the command line for the embedded default model
DEFAULT_MODEL = "default"
_COLORS = ("#1f77b4", "#d62728", "#2ca02c", "#9467bd", "#ff7f0e", "#8c564b")


class CompareError(ValueError):
    """The comparison cannot run as configured; the message says what to change."""


@dataclass
class CompareConfig:
    """Models to compare and the geometry settings every one of them gets.

    ``models``: run directories, Hub names or local paths; None (or ``"default"``) is the
    embedded SmolLM2. ``labels``: short names (None: derived from the models). ``prompts``:
    prompt sets for text models (None: ``mixed``); wind tunnels always read their task.
    ``corpus_paths``: where text corpora are looked up (None: the defaults)."""

    models: tuple[str | None, ...] = (None,)
    labels: tuple[str, ...] | None = None
    out: Path = Path("runs/compare")
    prompts: tuple[str, ...] | None = None
    n_per_quintile: int = 15
    pool_size: int = 1000
    n_resamples: int = 1000
    curve_resamples: int = 200
    seed: int = 0
    batch_size: int = 16
    dtype: str | None = None
    progress: bool = True
    corpus_paths: CorpusPaths | None = None

    def to_dict(self) -> dict[str, Any]:
        return asdict(self) | {"out": str(self.out), "corpus_paths": None if self.corpus_paths
                               is None else str(self.corpus_paths)}

    def resolved_labels(self) -> list[str]:
        if not self.models:
            raise CompareError("give at least one model to compare")
        if self.labels is not None:
            if len(self.labels) != len(self.models):
                raise CompareError(f"{len(self.labels)} labels for {len(self.models)} models")
            labels = list(self.labels)
        else:
            labels = [_label(m) for m in self.models]
        bad = [x for x in labels if not x or "/" in x or x.startswith(".")]
        if bad:
            raise CompareError(f"labels name output folders: {bad} are not usable (no '/', "
                               "no leading '.')")
        if len(set(labels)) != len(labels):
            raise CompareError(f"labels must differ, got {labels}; pass labels")
        return labels


def _label(model: str | None) -> str:
    if model in (None, DEFAULT_MODEL):
        return "smollm2"
    return Path(str(model).rstrip("/")).name or str(model)


def geometry_config(cfg: CompareConfig, model: str | None, out: Path, windtunnel: bool,
                    ) -> GeometryConfig:
    """The geometry run one model gets (identical settings for every model)."""
    return GeometryConfig(
        model=model, prompts=None if windtunnel else cfg.prompts, out=out,
        n_per_quintile=cfg.n_per_quintile, pool_size=cfg.pool_size, seed=cfg.seed,
        n_resamples=cfg.n_resamples, curve_resamples=cfg.curve_resamples,
        batch_size=cfg.batch_size, dtype=cfg.dtype, progress=cfg.progress,
        corpus_paths=cfg.corpus_paths)


def _fingerprint(g: GeometryConfig, m: interp.InterpModel) -> str:
    keep = {k: v for k, v in g.to_dict().items() if k not in ("out", "progress", "batch_size")}
    blob = json.dumps([keep, weights_fingerprint(m), m.info.dtype], sort_keys=True, default=str)
    return hashlib.sha256(blob.encode()).hexdigest()[:16]


def geometry_for(cfg: CompareConfig, label: str, model: interp.InterpModel,
                 spec: str | None) -> tuple[dict[str, Any], bool]:
    """(geometry summary, reused) for one model, run into ``out/label`` unless a finished run
    with the same configuration and weights is there."""
    out = Path(cfg.out) / label
    g = geometry_config(cfg, spec, out, model.task is not None)
    fp = _fingerprint(g, model)
    mark, summ = out / "compare.json", out / "summary.json"
    if mark.exists() and summ.exists() and json.loads(mark.read_text()).get("fp") == fp:
        return json.loads(summ.read_text()), True
    s = run_geometry(g, model=model)
    write_json(mark, {"fp": fp, "label": label})
    return s, False


# ---------------------------------------------------------------- comparison tables
#: (metric, where in a prompt-set summary, display name)
_SET_METRICS = (
    ("pc1", "pc1", "value PC1 share"),
    ("pc1_pc2", "pc1_pc2", "value PC1+PC2 share"),
    ("participation_ratio", "participation_ratio", "participation ratio"),
    ("abs_rho_pc1_entropy", "rho_pc1_entropy", "|ρ(PC1, model entropy)|"),
    ("abs_rho_pc1_bayes_entropy", "rho_pc1_bayes_entropy", "|ρ(PC1, Bayes entropy)|"),
    ("probe_r2", "probe_r2", "entropy-probe R² (final layer)"),
    ("attention_focusing", "attention_focusing", "attention focusing"),
)


def tidy(label: str, s: dict[str, Any]) -> list[dict[str, Any]]:
    """Long rows (label, model, prompt_set, metric, value, low, high) from one geometry
    summary: the per-set metrics at the final layer, and the model-wide key orthogonality."""
    rows: list[dict[str, Any]] = []

    def add(pset: str | None, metric: str, value: Any, low: Any = None, high: Any = None,
            ) -> None:
        rows.append({"label": label, "model": s["model"], "prompt_set": pset, "metric": metric,
                     "value": _num(value), "low": _num(low), "high": _num(high)})

    for pset, ps in s["prompt_sets"].items():
        for metric, key, _ in _SET_METRICS:
            v = ps.get(key)
            if v is None:
                continue
            if metric == "probe_r2":
                add(pset, metric, next(r["r2"] for r in v if r["layer"] == s["layer"]))
            elif metric.startswith("abs_rho"):
                add(pset, metric, v["abs"], *_abs_ci(v))
            elif isinstance(v, dict):
                add(pset, metric, v["estimate"], v.get("low"), v.get("high"))
            else:
                add(pset, metric, v)
        add(pset, "criteria_met", _criteria_count(ps["criteria_met"]))
    k = s["key_orthogonality"]
    add(None, "key_orthogonality", k["mean_abs_cos"])
    add(None, "key_fraction_below_0.20", k["fraction_layers_below_0.20"])
    add(None, "key_random_init", k["random_init_baseline"]["mean_abs_cos"])
    add(None, "n_layers", s["n_layers"])
    return rows


def _abs_ci(v: dict[str, Any]) -> tuple[float | None, float | None]:
    lo, hi = v.get("low"), v.get("high")
    if lo is None or hi is None:
        return None, None
    if lo <= 0 <= hi:
        return 0.0, max(abs(lo), abs(hi))
    return min(abs(lo), abs(hi)), max(abs(lo), abs(hi))


def _criteria_count(label: str) -> float:
    try:
        return float(str(label).split("/")[0])
    except ValueError:
        return float("nan")


def _num(x: Any) -> float:
    return float("nan") if x is None else float(x)


def side_by_side(table: pd.DataFrame) -> pd.DataFrame:
    """Metrics as rows, one column per ``label · prompt set`` (model-wide metrics repeated)."""
    names = {m: d for m, _, d in _SET_METRICS} | {
        "criteria_met": "Paper III criteria met (of 3)",
        "key_orthogonality": "key orthogonality (mean |cos|)",
        "key_fraction_below_0.20": "layers with key |cos| < 0.20",
        "key_random_init": "key |cos| at random init", "n_layers": "layers"}
    cols: dict[str, dict[str, float]] = {}
    for (label, pset), g in table[table["prompt_set"].notna()].groupby(
            ["label", "prompt_set"], sort=False):
        col = {r["metric"]: r["value"] for r in g.to_dict("records")}
        wide = table[(table["label"] == label) & table["prompt_set"].isna()]
        col |= {r["metric"]: r["value"] for r in wide.to_dict("records")}
        cols[f"{label} · {pset}"] = col
    order = [m for m in names if any(m in c for c in cols.values())]
    return pd.DataFrame({"metric": [names[m] for m in order],
                         **{k: [c.get(m, float("nan")) for m in order]
                            for k, c in cols.items()}})


_CURVES = (("pc1", None, "value PC1 share"), ("abs_spearman_pc1", "entropy",
                                              "|ρ(PC1, entropy)|"),
           ("probe_r2", "entropy", "entropy-probe R²"),
           ("attention_entropy_bits", None, "attention entropy (bits)"))


def curves(label: str, run_dir: Path, n_layers: int) -> pd.DataFrame:
    """Per-layer curves of one geometry run on a normalised depth axis (layer / (L − 1))."""
    t = pd.read_parquet(run_dir / "table.parquet")
    parts = []
    for metric, target, _ in _CURVES:
        sel = t[(t["metric"] == metric) & t["layer"].notna()]
        if target is not None:
            sel = sel[sel["target"] == target]
        parts.append(sel[["prompt_set", "layer", "metric", "value", "low", "high"]])
    key = t[(t["metric"] == "key_mean_abs_cos") & t["layer"].notna()]
    parts.append(key[["prompt_set", "layer", "metric", "value", "low", "high"]])
    out = pd.concat(parts, ignore_index=True)
    out["layer"] = out["layer"].astype(int)
    out.insert(0, "label", label)
    out["depth"] = out["layer"] / max(n_layers - 1, 1)
    return out


def curves_figure(c: pd.DataFrame) -> go.Figure:
    """Depth-normalised per-layer panels, one line per model and prompt set."""
    panels = [*_CURVES, ("key_mean_abs_cos", None, "key orthogonality (mean |cos|)")]
    fig = make_subplots(rows=3, cols=2, subplot_titles=[p[2] for p in panels])
    keys = list(dict.fromkeys(zip(c["label"], c["prompt_set"].fillna(""), strict=True)))
    for i, (metric, _, _) in enumerate(panels):
        r, col = divmod(i, 2)
        for j, (label, pset) in enumerate(keys):
            sel = c[(c["label"] == label) & (c["metric"] == metric)]
            if metric != "key_mean_abs_cos":
                sel = sel[sel["prompt_set"] == pset]
            elif pset != next(p for lab, p in keys if lab == label):
                continue
            if sel.empty:
                continue
            name = label if metric == "key_mean_abs_cos" else f"{label} · {pset}"
            fig.add_scatter(x=sel["depth"], y=sel["value"], mode="lines+markers", name=name,
                            legendgroup=name, showlegend=i == 0,
                            line={"color": _COLORS[j % len(_COLORS)]}, row=r + 1, col=col + 1)
    fig.update_xaxes(title_text="depth (layer / last layer)")
    fig.update_layout(template="plotly_white", height=850)
    return fig


def bars_figure(table: pd.DataFrame) -> go.Figure:
    """Final-layer PC1, PC1+PC2, |ρ|, probe R², focusing and key orthogonality per model, with
    95 % CIs where the geometry run has them."""
    metrics = ["pc1", "pc1_pc2", "abs_rho_pc1_entropy", "probe_r2", "attention_focusing",
               "key_orthogonality"]
    fig = go.Figure()
    t = table[table["metric"].isin(metrics)]
    sets = list(dict.fromkeys(zip(t["label"], t["prompt_set"].fillna(""), strict=True)))
    for j, (label, pset) in enumerate((lab, p) for lab, p in sets if p):
        sel = t[(t["label"] == label) & ((t["prompt_set"] == pset) | t["prompt_set"].isna())]
        sel = sel.set_index("metric").reindex(metrics)
        err_hi = (sel["high"] - sel["value"]).fillna(0)
        err_lo = (sel["value"] - sel["low"]).fillna(0)
        fig.add_bar(x=metrics, y=sel["value"], name=f"{label} · {pset}",
                    marker_color=_COLORS[j % len(_COLORS)],
                    error_y={"type": "data", "array": err_hi, "arrayminus": err_lo})
    fig.update_layout(barmode="group", template="plotly_white", height=420,
                      yaxis_title="value (shares, |ρ|, R², fraction, mean |cos|)")
    return fig


# ---------------------------------------------------------------- the run
def run_compare(cfg: CompareConfig, models: Sequence[interp.InterpModel | None] | None = None,
                ) -> dict[str, Any]:
    """Run (or reuse) every model's geometry, then write the comparison (module doc).
    ``models``: already-loaded models in the order of ``cfg.models`` (None entries load)."""
    t0 = time.perf_counter()
    labels = cfg.resolved_labels()
    if models is not None and len(models) != len(cfg.models):
        raise CompareError(f"{len(models)} loaded models for {len(cfg.models)} model names")
    out = Path(cfg.out)
    out.mkdir(parents=True, exist_ok=True)
    summaries: dict[str, dict[str, Any]] = {}
    reused: list[str] = []
    infos: dict[str, Any] = {}
    rows: list[dict[str, Any]] = []
    curve_parts = []
    for i, (label, spec) in enumerate(zip(labels, cfg.models, strict=True)):
        spec = None if spec == DEFAULT_MODEL else spec
        m = models[i] if models is not None and models[i] is not None else \
            interp.load(spec, dtype=cfg.dtype)
        s, hit = geometry_for(cfg, label, m, spec)
        summaries[label] = s
        infos[label] = m.info.to_dict()
        if hit:
            reused.append(label)
        rows += tidy(label, s)
        curve_parts.append(curves(label, out / label, s["n_layers"]))
    table = pd.DataFrame(rows)
    wide = side_by_side(table)
    curve_table = pd.concat(curve_parts, ignore_index=True)
    summary = {
        "labels": labels,
        "models": {lab: {"model": s["model"], "prompt_sets": list(s["prompt_sets"]),
                         "n_layers": s["n_layers"], "layer": s["layer"],
                         "run_dir": str(out / lab)} for lab, s in summaries.items()},
        "metrics": {lab: {f"{r['prompt_set'] or 'model'}.{r['metric']}": _json(r["value"])
                          for r in rows if r["label"] == lab} for lab in labels},
        "reused": reused,
        "wall_s": round(time.perf_counter() - t0, 2),
    }
    manifest = run_manifest(seed=cfg.seed, dtype=cfg.dtype, models=infos, compare=cfg.to_dict())
    write_table(out / "table.parquet", table)
    write_table(out / "curves.parquet", curve_table)
    write_table(out / "side_by_side.csv", wide)
    write_json(out / "summary.json", summary)
    write_json(out / "manifest.json", manifest)
    html_report(out / "report.html", "bayesgeom compare: " + " vs ".join(labels), [
        ("Side by side (final layer)", wide),
        ("Final-layer metrics", bars_figure(table)),
        ("Per-layer curves on normalised depth", curves_figure(curve_table)),
        ("Per-model reports", "; ".join(f"{lab}: {out / lab / 'report.html'}"
                                        for lab in labels)),
    ], manifest)
    return summary


def _json(x: float) -> float | None:
    return None if pd.isna(x) else float(x)


def format_summary(s: dict[str, Any], wide: pd.DataFrame | None = None) -> str:
    """The side-by-side table as text (read from the run directory when not given)."""
    if wide is None:
        run = Path(next(iter(s["models"].values()))["run_dir"]).parent
        wide = pd.read_csv(run / "side_by_side.csv")
    return wide.to_string(index=False, float_format=lambda x: f"{x:.3f}")
