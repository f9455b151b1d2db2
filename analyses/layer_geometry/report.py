"""Figures, tables and terminal view of a layer-geometry run
(:mod:`analyses.layer_geometry.run`)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pandas as pd
import plotly.graph_objects as go
from plotly.subplots import make_subplots

from ..kit.html import COLORS, html_report
from ..kit.numbers import num
from .result import LayerGeometryResult

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


def curves_figure(table: pd.DataFrame) -> go.Figure:
    """One panel per metric of :data:`PANELS`: value per layer, one line per condition."""
    fig = make_subplots(rows=1, cols=len(PANELS), subplot_titles=[t for t, _ in
                                                                  PANELS.values()])
    for j, (metric, (_, yr)) in enumerate(PANELS.items(), start=1):
        sub = table[table["metric"] == metric]
        for i, (c, g) in enumerate(sub.groupby("condition", sort=False)):
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


def _n(x: float | None, nd: int = 3) -> str:
    return num(x, nd)


def format_summary(res: LayerGeometryResult) -> str:
    """A compact terminal table: per layer, trained vs random-init vs position-only."""
    c = res.conditions
    pos = c["position_only"].layers[0]
    steps = "?" if res.steps is None else f"{res.steps:,}"
    lines = [f"{res.model} · {res.arch} on {res.task} · {steps} steps · {res.params:,} params",
             f"{res.n_sequences} held-out sequences × {res.n_positions} positions = "
             f"{res.n_rows} rows; entropy MAE trained {_n(c['trained'].entropy_mae_bits, 4)}"
             f" bits, random init {_n(c['random_init'].entropy_mae_bits, 4)} bits",
             "cells: trained / random init (position only; shuffled target for R², sil)",
             f"{'layer':<5} {'PC1':>13} {'dim90':>7} {'max|r(PC,H)| (i)':>19} "
             f"{'R²(H)':>20} {'silhouette':>20}"]
    for lm, tw in zip(c["trained"].layers, c["random_init"].layers, strict=True):
        lines.append(
            f"{lm.layer:<5} {_n(lm.pc1_ratio)}/{_n(tw.pc1_ratio)} {lm.dim90:>3}/{tw.dim90:<3} "
            f"{_n(lm.max_abs_corr_pc_h)} ({lm.max_corr_pc})/{_n(tw.max_abs_corr_pc_h)} "
            f"{_n(lm.linear_r2_h):>6}/{_n(tw.linear_r2_h):>6} ({_n(lm.linear_r2_h_shuffled)})"
            f" {_n(lm.silhouette_argmax):>6}/{_n(tw.silhouette_argmax):>6} "
            f"({_n(lm.silhouette_argmax_shuffled)})")
    lines.append(f"position only: R²(H) {_n(pos.linear_r2_h)}, silhouette "
                 f"{_n(pos.silhouette_argmax)}")
    ref = res.paper_hmm.get(res.arch)
    if ref and res.task == "hmm":
        lines.append(f"Paper I v3 ({res.arch}, HMM, final layer): R²(H) "
                     f"{ref['linear_r2_h']}, PC1 {ref['pc1_ratio']:.1%}")
    return "\n".join(lines)


def write_report(path: Path, res: LayerGeometryResult, table: pd.DataFrame,
                 scatter: pd.DataFrame, manifest: dict[str, Any]) -> Path:
    return html_report(path, f"Layer geometry — {res.arch} on {res.task} ({res.model})", [
        ("Summary", format_summary(res)),
        ("Per layer (resid_post), beside its controls", curves_figure(table)),
        ("Last layer: 2-D PCA coloured by argmax posterior and by H_Bayes",
         scatter_figure(scatter, res)),
        ("Per layer × condition", wide_table(table)),
    ], manifest)
