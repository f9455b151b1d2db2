"""The verdict table, tables, figures and the terminal view of a comparison
(:mod:`analyses.compare.run`).

Display names come from :data:`HEADLINE_NAMES` and the geometry metric catalogue, so the
metrics of newly registered measures appear with their labels and no edit here. The verdicts
are the geometry run's (:mod:`analyses.geometry.findings`), read from the comparison's table.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pandas as pd
import plotly.graph_objects as go
from plotly.subplots import make_subplots

from ...probes.bootstrap import excludes
from ..geometry.findings import PAPER3, key_row, rho_row
from ..geometry.probes import catalogue
from ..kit.findings import Finding, findings_text
from ..kit.html import COLORS, html_report, legend_names
from ..kit.learned import gate
from .result import CompareResult

#: what to look for in :func:`bars_figure`
BARS_CAPTION = ("Look for: each solid bar against the lighter hatched bar of the same colour "
                "beside it, the same analysis on that model's random-init twin; whiskers are "
                "95 % intervals where the run has them (none where the interval excludes its "
                "estimate: not evidence). Key orthogonality is a mean |cos|: lower is more "
                "orthogonal.")
#: what to look for in :func:`curves_figure`
CURVES_CAPTION = ("Look for: each solid line against the dotted line of the same colour (its "
                  "random-init twin); depth is layer / last layer, so models of different "
                  "depth line up.")

#: display names of the compared headline (see :func:`analyses.compare.run.headline_rows`)
HEADLINE_NAMES = {
    "pc1": "value PC1 share", "pc1_pc2": "value PC1+PC2 share",
    "participation_ratio": "participation ratio",
    "abs_rho_pc1_entropy": "|ρ(PC1, model entropy)|",
    "abs_rho_pc1_bayes_entropy": "|ρ(PC1, Bayes entropy)|",
    "probe_r2": "entropy-probe R² (final layer)",
    "probe_r2_bayes_entropy": "Bayes-entropy probe R² (final layer)",
    "attention_focusing": "attention focusing",
    "criteria_met": "Paper III criteria met (of 3)",
    "key_orthogonality": "key orthogonality (mean |cos|, Paper III weights)",
    "key_fraction_below_0.20": "layers with key |cos| < 0.20 (Paper III)",
    "key_fraction_below_init": "layers with key |cos| below the random-init twin's",
    "key_gaussian": "key |cos| of i.i.d. Gaussian W_K (analytic reference)",
    "n_layers": "layers",
}

#: controls of a compared metric, by the suffix :mod:`analyses.compare.run` appends, in order
CONTROLS = {"@random_init": "— random init",
            "@position": "— position only", "|position": "— given position"}


def display_name(metric: str) -> str:
    """The label of a compared metric (``name[target]`` for per-target measures; a control's
    suffix ``@random_init``, ``@position`` or ``|position`` named after it)."""
    for suffix, label in CONTROLS.items():
        if metric.endswith(suffix):
            base = metric.removesuffix(suffix)
            if suffix == "@position" and base.startswith("abs_rho_pc1_"):
                return f"|ρ(position, {base.removeprefix('abs_rho_pc1_').replace('_', ' ')})|" \
                       f" {label}"
            return f"{display_name(base)} {label}"
    if metric in HEADLINE_NAMES:
        return HEADLINE_NAMES[metric]
    base, _, target = metric.partition("[")
    spec = catalogue().get(base)
    label = spec.label if spec else base
    return f"{label} ({target.rstrip(']')})" if target else label


def _ordered(metrics: list[str]) -> list[str]:
    """Headline metrics first, each followed by its controls; then the rest, likewise."""
    present = set(metrics)
    bases = [m for m in HEADLINE_NAMES if m in present]
    bases += [m for m in metrics if m not in bases and not any(m.endswith(c) for c in CONTROLS)]
    out = [x for b in bases for x in (b, *(b + c for c in CONTROLS)) if x in present]
    return out + [m for m in metrics if m not in out]


def side_by_side(table: pd.DataFrame) -> pd.DataFrame:
    """Metrics as rows, one column per ``label · prompt set`` (model-wide metrics repeated)."""
    cols: dict[str, dict[str, float]] = {}
    for (label, pset), g in table[table["prompt_set"].notna()].groupby(
            ["label", "prompt_set"], sort=False):
        col = {r["metric"]: r["value"] for r in g.to_dict("records")}
        wide = table[(table["label"] == label) & table["prompt_set"].isna()]
        col |= {r["metric"]: r["value"] for r in wide.to_dict("records")}
        cols[f"{label} · {pset}"] = col
    order = _ordered(list(dict.fromkeys(m for c in cols.values() for m in c)))
    return pd.DataFrame({"metric": [display_name(m) for m in order],
                         **{k: [c.get(m, float("nan")) for m in order]
                            for k, c in cols.items()}})


def curves_figure(c: pd.DataFrame) -> go.Figure:
    """Depth-normalised per-layer panels, one line per model, prompt set and target (dotted:
    the same analysis on the random-initialisation twin)."""
    cat = catalogue()
    metrics = list(dict.fromkeys(c["metric"]))
    rows = -(-len(metrics) // 2)
    fig = make_subplots(rows=rows, cols=2,
                        subplot_titles=[cat[m].label if m in cat else m for m in metrics])
    colors: dict[str, str] = {}
    for i, metric in enumerate(metrics):
        r, col = divmod(i, 2)
        sel = c[c["metric"] == metric]
        for (label, pset, target, ref), g in sel.groupby(
                [sel["label"], sel["prompt_set"].fillna("model"), sel["target"].fillna(""),
                 sel["reference"]], sort=False):
            base = " · ".join(x for x in (label, pset, target) if x and x != "model")
            name = base if ref == "model" else f"{base} · {ref.replace('_', ' ')}"
            color = colors.setdefault(base, COLORS[len(colors) % len(COLORS)])
            fig.add_scatter(x=g["depth"], y=g["value"], mode="lines+markers", name=name,
                            legendgroup=name, showlegend=name not in legend_names(fig),
                            line={"color": color, "dash": "solid" if ref == "model" else "dot"},
                            row=r + 1, col=col + 1)
    fig.update_xaxes(title_text="depth (layer / last layer)")
    fig.update_layout(template="plotly_white", height=280 * rows)
    return fig


def bars_figure(table: pd.DataFrame) -> go.Figure:
    """Final-layer PC1, PC1+PC2, |ρ|, probe R², focusing and key orthogonality per model, with
    95 % CIs where the geometry run has them (no whisker for an interval that excludes its
    estimate); hatched beside each, the same numbers of the random-initialisation twin."""
    metrics = ["pc1", "pc1_pc2", "abs_rho_pc1_entropy", "probe_r2", "attention_focusing",
               "key_orthogonality"]
    fig = go.Figure()
    t = table[table["metric"].isin(metrics + [m + "@random_init" for m in metrics])]
    sets = list(dict.fromkeys(zip(t["label"], t["prompt_set"].fillna(""), strict=True)))
    for j, (label, pset) in enumerate((lab, p) for lab, p in sets if p):
        sel = t[(t["label"] == label) & ((t["prompt_set"] == pset) | t["prompt_set"].isna())]
        for suffix, hatch in (("", ""), ("@random_init", "/")):
            part = sel.set_index("metric").reindex([m + suffix for m in metrics])
            if part["value"].isna().all():
                continue
            ok = [not excludes(v, lo, hi) for v, lo, hi in
                  zip(part["value"], part["low"], part["high"], strict=True)]
            err_hi = (part["high"] - part["value"]).where(ok).fillna(0)
            err_lo = (part["value"] - part["low"]).where(ok).fillna(0)
            fig.add_bar(x=[HEADLINE_NAMES[m] for m in metrics], y=part["value"],
                        name=f"{label} · {pset}" + (" · random init" if suffix else ""),
                        marker={"color": COLORS[j % len(COLORS)], "pattern_shape": hatch},
                        opacity=1.0 if not suffix else 0.55,
                        error_y={"type": "data", "array": err_hi, "arrayminus": err_lo})
    fig.update_layout(barmode="group", template="plotly_white", height=420,
                      yaxis_title="value (shares, |ρ|, R², fraction, mean |cos|)")
    return fig


def _number(t: pd.DataFrame, metric: str, pset: str | None) -> tuple[float, float, float]:
    """(value, low, high) of one row of a model's compared table (NaNs where absent)."""
    sel = t[(t["metric"] == metric)
            & (t["prompt_set"].isna() if pset is None else t["prompt_set"] == pset)]
    if sel.empty:
        return float("nan"), float("nan"), float("nan")
    r = sel.iloc[0]
    return float(r["value"]), float(r["low"]), float(r["high"])


def _twin(t: pd.DataFrame, metric: str, pset: str | None,
          ) -> tuple[float | None, float | None, float | None]:
    """The random-init twin's (value, low, high) of ``metric``, all None without a twin."""
    if not (t["metric"] == metric + "@random_init").any():
        return None, None, None
    return _number(t, metric + "@random_init", pset)


def findings(result: CompareResult, table: pd.DataFrame) -> list[Finding]:
    """The verdict table of a comparison: per model, its key orthogonality against its
    random-init twin and, on its first prompt set, |ρ(PC1, model entropy)| against its twin
    and position alone, with the geometry run's criteria (:mod:`analyses.geometry.findings`);
    a wind tunnel's rows stand behind its learned check (:func:`kit.learned.gate`).
    ``table``: the comparison's ``table.parquet`` (the intervals live there)."""
    return [row for label in result.labels
            for row in gate(_model_rows(result, table, label), result.learned.get(label),
                            who=f"{label}: ")]


def _model_rows(result: CompareResult, table: pd.DataFrame, label: str) -> list[Finding]:
    """One model's rows of :func:`findings`."""
    t = table[table["label"] == label]
    m = result.models.get(label)
    pset = m.prompt_sets[0] if m is not None and m.prompt_sets else None
    key = _number(t, "key_orthogonality", None)[0]
    twin = _twin(t, "key_orthogonality", None)[0]
    below = _number(t, "key_fraction_below_init", None)[0] if twin is not None else None
    rows = [key_row(f"{label}: ", key, twin, below,
                    _number(t, "key_fraction_below_0.20", None)[0],
                    PAPER3.key_orthogonality, _number(t, "key_gaussian", None)[0])]
    rho = "abs_rho_pc1_entropy"
    if pset is None or not (t["metric"] == rho).any():
        return rows
    pos = (t["metric"] == rho + "@position").any()
    rows.append(rho_row(
        f"{label} · {pset}, layer {m.layer if m else '?'}: ", "entropy",
        *_number(t, rho, pset), *_twin(t, rho, pset),
        *((_number(t, "probe_r2@position", pset)[0], _number(t, rho + "@position", pset)[0],
           _number(t, rho + "|position", pset)[0]) if pos else (None, None, None))))
    return rows


def write_report(path: Path, result: CompareResult, table: pd.DataFrame, curves: pd.DataFrame,
                 manifest: dict[str, Any]) -> Path:
    out = Path(path).parent
    return html_report(path, "bayesgeom compare: " + " vs ".join(result.labels),
                       findings(result, table), [
        ("Side by side (final layer)", side_by_side(table)),
        ("Final-layer metrics", bars_figure(table), BARS_CAPTION),
        ("Per-layer curves on normalised depth", curves_figure(curves), CURVES_CAPTION),
        ("Per-model reports", "; ".join(f"{lab}: {out / lab / 'report.html'}"
                                        for lab in result.labels)),
    ], manifest)


def format_summary(result: CompareResult) -> str:
    """The verdict table (:func:`findings`, from the run's ``table.parquet``), then the
    side-by-side table as text."""
    out = Path(next(iter(result.models.values())).run_dir).parent
    wide = pd.read_csv(out / "side_by_side.csv")
    return (findings_text(findings(result, pd.read_parquet(out / "table.parquet"))) + "\n"
            + format_wide(wide))


def format_wide(wide: pd.DataFrame) -> str:
    return wide.to_string(index=False, float_format=lambda x: f"{x:.3f}")
