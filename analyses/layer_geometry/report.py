"""The verdict table, figures, tables and terminal view of a layer-geometry run
(:mod:`analyses.layer_geometry.run`).

The run sets every final-layer number beside its controls (the random-init twin, position
alone, the shuffled target) but records no interval or test, so its findings give the numbers
and gaps side by side and no verdict.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd
import plotly.graph_objects as go
from plotly.subplots import make_subplots

from ..kit.findings import Finding, findings_text
from ..kit.html import COLORS, html_report
from ..kit.numbers import num, sig
from .result import LayerGeometryResult, LayerMetrics

#: metric -> (panel title, y-axis range or None)
PANELS = {
    "pc1_ratio": ("PC1 share of variance", (0, 1)),
    "dim90": ("dimensions for 90 % of variance", None),
    "max_abs_corr_pc_h": ("max_{i≤5} |corr(PC_i, H_Bayes)|", (0, 1)),
    "linear_r2_h": ("linear R² of H_Bayes (80/20)", None),
    "silhouette_argmax": ("silhouette, argmax-posterior labels (10 PCs)", (-1, 1)),
}
DASH = {"trained": "solid", "random_init": "dash", "position_only": "dot",
        "shuffled_target": "dashdot"}

#: what to look for in :func:`curves_figure`
CURVES_CAPTION = ("Look for: the solid trained line above the dashed random-init twin, the "
                  "dotted position-only line and the dash-dotted shuffled target (R² and "
                  "silhouette only) in the R², correlation and silhouette panels; only a gap "
                  "over all of them is the trained model's own.")
#: what to look for in :func:`scatter_figure`
SCATTER_CAPTION = ("Look for: the trained rows (top) falling into separate clouds, one colour "
                   "per argmax-posterior state (Paper I v3's clusters), with H_Bayes varying "
                   "inside each cloud (right); the random-init rows (bottom) show what "
                   "untrained weights give.")
NO_CRITERION = "no criterion: the run records no interval or test"


def curves_figure(table: pd.DataFrame) -> go.Figure:
    """One panel per metric of :data:`PANELS`: value per layer, one line per condition."""
    fig = make_subplots(rows=1, cols=len(PANELS), subplot_titles=[t for t, _ in
                                                                  PANELS.values()])
    for j, (metric, (_, yr)) in enumerate(PANELS.items(), start=1):
        sub = table[table["metric"] == metric]
        for c, g in sub.groupby("condition", sort=False):
            i = list(DASH).index(str(c)) if str(c) in DASH else len(DASH)
            fig.add_trace(go.Scatter(
                x=g["layer"], y=g["value"], name=str(c), mode="lines+markers",
                legendgroup=str(c), showlegend=j == 1,
                line={"color": COLORS[i % len(COLORS)], "dash": DASH.get(str(c), "solid")}),
                row=1, col=j)
        if yr is not None:
            fig.update_yaxes(range=list(yr), row=1, col=j)
        fig.update_xaxes(title_text="layer (resid_post)", dtick=1, row=1, col=j)
    fig.update_layout(height=380, width=360 * len(PANELS), margin={"t": 50})
    return fig


def scatter_figure(scatter: pd.DataFrame, res: LayerGeometryResult) -> go.Figure:
    """Last-layer 2-D PCA, trained and random-init rows, coloured by the argmax of the exact
    posterior (left) and by H_Bayes in bits (right) -- the paper's "5 clusters" view."""
    conds = list(scatter["condition"].unique())
    titles = [f"{c}: {what}" for c in conds for what in ("argmax posterior state",
                                                        "H_Bayes (bits)")]
    fig = make_subplots(rows=len(conds), cols=2, subplot_titles=titles,
                        horizontal_spacing=0.12, vertical_spacing=0.12)
    for r, c in enumerate(conds, start=1):
        g = scatter[scatter["condition"] == c]
        for k in sorted(g["argmax_state"].unique()):
            s = g[g["argmax_state"] == k]
            fig.add_trace(go.Scattergl(x=s["pc1"], y=s["pc2"], mode="markers",
                                       name=f"state {k}", legendgroup=f"state {k}",
                                       showlegend=r == 1,
                                       marker={"size": 4, "opacity": 0.6,
                                               "color": COLORS[int(k) % len(COLORS)]}),
                          row=r, col=1)
        fig.add_trace(go.Scattergl(
            x=g["pc1"], y=g["pc2"], mode="markers", showlegend=False, name="H_Bayes",
            marker={"size": 4, "opacity": 0.6, "color": g["h_bayes_bits"],
                    "colorscale": "Viridis", "showscale": r == 1,
                    "colorbar": {"title": "bits", "x": 1.02}}), row=r, col=2)
        last = res.conditions[c].layers[-1]
        for col in (1, 2):
            fig.update_xaxes(title_text=f"PC1 ({last.pc1_ratio:.1%})", row=r, col=col)
            fig.update_yaxes(title_text=f"PC2 ({last.pc2_ratio:.1%})", row=r, col=col)
    fig.update_layout(height=420 * len(conds), width=1000, margin={"t": 50})
    return fig


def wide_table(table: pd.DataFrame) -> pd.DataFrame:
    """Layer × condition rows, one column per metric (the report's table)."""
    w = table.pivot_table(index=["layer", "condition"], columns="metric", values="value",
                          sort=False).reset_index()
    order = {c: i for i, c in enumerate(DASH)}
    w = w.sort_values(["layer", "condition"], key=lambda s: s.map(order) if s.name ==
                      "condition" else s)
    cols = ["layer", "condition", *[m for m in ("pc1_ratio", "pc2_ratio", "dim90",
                                                 "max_abs_corr_pc_h", "max_corr_pc",
                                                 "linear_r2_h", "silhouette_argmax")
                                    if m in w.columns]]
    return w[cols]


def _gaps(value: float, controls: dict[str, float]) -> str:
    """"gap +x over the random-init twin, …" for each finite control."""
    out = [f"gap {value - v:+.3g} over {name}" for name, v in controls.items()
           if np.isfinite(value) and np.isfinite(v)]
    return "; ".join([NO_CRITERION, *out])


def findings(res: LayerGeometryResult) -> list[Finding]:
    """The verdict table of a layer-geometry run (module doc): the final layer's H_Bayes
    decoding, argmax-state clusters and PC1 share, and the calibration, each beside its
    controls."""
    c = res.conditions
    last: LayerMetrics = c["trained"].layers[-1]
    twin: LayerMetrics = c["random_init"].layers[-1]
    pos: LayerMetrics = c["position_only"].layers[0]
    ref = res.paper_hmm.get(res.arch, {}) if res.task == "hmm" else {}
    where = f"final layer {last.layer} (resid_post), {res.n_rows} held-out rows"

    def paper(metric: str) -> str:
        return (f"; Paper I v3 ({res.arch}, HMM) {sig(ref[metric])}" if metric in ref else "")

    def row(claim: str, metric: str, shuffled: float | None = None) -> Finding:
        v = float(getattr(last, metric))
        ctl = {"the random-init twin": float(getattr(twin, metric)),
               "position only": float(getattr(pos, metric))}
        if shuffled is not None:
            ctl["the shuffled target"] = shuffled
        return Finding(f"{claim}, {where}", v,
                       control="; ".join(f"{k.removeprefix('the ')} {sig(x)}"
                                         for k, x in ctl.items()),
                       survives=None, evidence=_gaps(v, ctl) + paper(metric),
                       undefined="too few rows or a constant target")

    mae, twin_mae = c["trained"].entropy_mae_bits, c["random_init"].entropy_mae_bits
    return [
        row("the residual stream encodes H_Bayes linearly (Paper I v3: linear R² of H_Bayes, "
            "80/20 split, per row)", "linear_r2_h", last.linear_r2_h_shuffled),
        row("rows cluster by the argmax-posterior state (Paper I v3 'clusters': silhouette "
            "on the top 10 PCs)", "silhouette_argmax", last.silhouette_argmax_shuffled),
        row("PC1 share of variance (Paper I v3: centred PCA)", "pc1_ratio"),
        Finding("the model's entropy is calibrated (entropy MAE: mean |H_model − H_Bayes| per "
                "row)", float("nan") if mae is None else mae, unit="bits",
                control=f"random-init twin {sig(twin_mae)} bits", survives=None,
                evidence=_gaps(float("nan") if mae is None else mae,
                               {} if twin_mae is None else {"the twin": twin_mae}),
                undefined="not measured"),
    ]


def format_summary(res: LayerGeometryResult) -> str:
    """The verdict table (:func:`findings`), then :func:`summary_table`."""
    return findings_text(findings(res)) + "\n" + summary_table(res)


def summary_table(res: LayerGeometryResult) -> str:
    """A compact table: per layer, trained vs random-init vs position-only."""
    c = res.conditions
    pos = c["position_only"].layers[0]
    steps = "?" if res.steps is None else f"{res.steps:,}"
    lines = [f"{res.model} · {res.arch} on {res.task} · {steps} steps · {res.params:,} params",
             f"{res.n_sequences} held-out sequences × {res.n_positions} positions = "
             f"{res.n_rows} rows; entropy MAE trained {num(c['trained'].entropy_mae_bits, 4)}"
             f" bits, random init {num(c['random_init'].entropy_mae_bits, 4)} bits",
             "cells: trained / random init (position only; shuffled target for R², sil)",
             f"{'layer':<5} {'PC1':>13} {'dim90':>7} {'max|r(PC,H)| (i)':>19} "
             f"{'R²(H)':>20} {'silhouette':>20}"]
    for lm, tw in zip(c["trained"].layers, c["random_init"].layers, strict=True):
        lines.append(
            f"{lm.layer:<5} {num(lm.pc1_ratio)}/{num(tw.pc1_ratio)} {lm.dim90:>3}/{tw.dim90:<3} "
            f"{num(lm.max_abs_corr_pc_h)} ({lm.max_corr_pc})/{num(tw.max_abs_corr_pc_h)} "
            f"{num(lm.linear_r2_h):>6}/{num(tw.linear_r2_h):>6} ({num(lm.linear_r2_h_shuffled)})"
            f" {num(lm.silhouette_argmax):>6}/{num(tw.silhouette_argmax):>6} "
            f"({num(lm.silhouette_argmax_shuffled)})")
    lines.append(f"position only: R²(H) {num(pos.linear_r2_h)}, silhouette "
                 f"{num(pos.silhouette_argmax)}")
    ref = res.paper_hmm.get(res.arch)
    if ref and res.task == "hmm":
        lines.append(f"Paper I v3 ({res.arch}, HMM, final layer): R²(H) "
                     f"{ref['linear_r2_h']}, PC1 {ref['pc1_ratio']:.1%}")
    return "\n".join(lines)


def write_report(path: Path, res: LayerGeometryResult, table: pd.DataFrame,
                 scatter: pd.DataFrame, manifest: dict[str, Any]) -> Path:
    return html_report(path, f"Layer geometry — {res.arch} on {res.task} ({res.model})",
                       findings(res), [
        ("Summary", summary_table(res)),
        ("Per layer (resid_post), beside its controls", curves_figure(table), CURVES_CAPTION),
        ("Last layer: 2-D PCA coloured by argmax posterior and by H_Bayes",
         scatter_figure(scatter, res), SCATTER_CAPTION),
        ("Per layer × condition", wide_table(table)),
    ], manifest)
