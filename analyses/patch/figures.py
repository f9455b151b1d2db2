"""The figures of a patching run (:mod:`analyses.patch.run`), read from its ``table.parquet``:
layer × position heatmaps (:func:`position_heatmap`) and layer × head heatmaps
(:func:`head_heatmap`) of the trained model on the evidence pairs beside the same cells on the
Bayes-null pairs and in the random-init twin, and attribution against exact patching
(:func:`attribution_scatter`).

Example:
    >>> import pandas as pd
    >>> rows = [dict(kind="resid_pre", layer=L, head=None, position=p, direction="denoising",
    ...              model=m, pairs=k, recovered_fraction=0.5, abs_effect_bits=0.01)
    ...         for L in (0, 1) for p in (3, 4)
    ...         for m, k in (("trained", "evidence"), ("trained", "bayes_null"),
    ...                      ("random_init", "evidence"))]
    >>> fig = position_heatmap(pd.DataFrame(rows), "resid_pre", "denoising", "effect_bits")
    >>> len(fig.data), [a.text for a in fig.layout.annotations][:1]
    (3, ['trained: recovered fraction'])
"""

from __future__ import annotations

import pandas as pd
import plotly.graph_objects as go
from plotly.subplots import make_subplots

from ..kit.html import COLORS

#: what to look for in the heatmaps and the scatter
HEATMAP_CAPTION = ("Look for: cells bright in the left panel (the trained model, evidence "
                   "pairs) and dark in the other two (the trained model and the twin share one "
                   "colour scale; the Bayes-null panel has its own, in bits). A cell bright on "
                   "the Bayes-null pairs "
                   "changes the output where the exact posterior says nothing changed: "
                   "off-distribution damage, not evidence. A cell bright in the twin is the "
                   "architecture's plumbing (the residual stream at the edited token), not "
                   "what training put there.")
SCATTER_CAPTION = ("Look for: points on the diagonal, where the first-order estimate equals "
                   "the exact patch; points far from it (listed in the verdict table) are the "
                   "cells where attribution patching misleads, typically large effects that "
                   "saturate a softmax.")


def _panels(metric: str) -> list[tuple[str, str, str, str]]:
    """(title, model, pairs, column) of the three panels."""
    main = "recovered_fraction" if metric == "effect_bits" else metric
    name = "recovered fraction" if metric == "effect_bits" else "effect (logits)"
    out = [(f"trained: {name}", "trained", "evidence", main)]
    if metric == "effect_bits":
        out.append(("Bayes-null pairs: |effect| (bits)", "trained", "bayes_null",
                    "abs_effect_bits"))
    out.append((f"random-init twin: {name}", "random_init", "evidence", main))
    return out


def _heatmap(table: pd.DataFrame, kind: str, direction: str, metric: str, x: str,
             x_title: str) -> go.Figure:
    panels = _panels(metric)
    fig = make_subplots(rows=1, cols=len(panels), subplot_titles=[p[0] for p in panels],
                        horizontal_spacing=0.12)
    sel = table[(table["kind"] == kind) & (table["direction"] == direction)]
    # panels of one measurement (the trained model and the twin) share one colour scale
    shown = sel[sel["pairs"] == "evidence"]
    ranges = {col: (float(shown[col].min()), float(shown[col].max()))
              for *_, col in panels if col in sel.columns and sel[col].notna().any()}
    for i, (_, model, pairs, col) in enumerate(panels, 1):
        right = fig.layout[f"xaxis{i if i > 1 else ''}"].domain[1]
        t = sel[(sel["model"] == model) & (sel["pairs"] == pairs)]
        if t.empty or col not in ranges:
            continue
        grid = t.pivot_table(index="layer", columns=x, values=col, aggfunc="first")
        lo, hi = ranges[col] if col != "abs_effect_bits" else (None, None)
        fig.add_trace(go.Heatmap(z=grid.to_numpy(), x=[str(c) for c in grid.columns],
                                 y=[str(r) for r in grid.index], colorscale="Viridis",
                                 zmin=lo, zmax=hi,
                                 colorbar={"x": right + 0.01, "len": 0.9,
                                           "thickness": 10},
                                 name=col), row=1, col=i)
        fig.update_xaxes(title_text=x_title, type="category", row=1, col=i)
        fig.update_yaxes(title_text="layer", type="category", row=1, col=i)
    fig.update_layout(height=360, width=1100, margin={"t": 60},
                      title=f"{kind}, {direction}")
    return fig


def position_heatmap(table: pd.DataFrame, kind: str, direction: str,
                     metric: str) -> go.Figure:
    """Layer × position of one site kind in one direction: the trained model on the evidence
    pairs, the Bayes-null pairs (exact posteriors only) and the twin."""
    return _heatmap(table, kind, direction, metric, "position", "position")


def head_heatmap(table: pd.DataFrame, kind: str, direction: str, metric: str) -> go.Figure:
    """Layer × head of a per-head kind (every position at once), panels as
    :func:`position_heatmap`."""
    t = table[table["position"].isna()] if "position" in table.columns else table
    return _heatmap(t, kind, direction, metric, "head", "head")


def attribution_scatter(attribution: pd.DataFrame, unit: str) -> go.Figure:
    """Attribution's estimate against the exact effect of every cell, one colour per site
    kind, one panel per direction, with the diagonal."""
    dirs = list(dict.fromkeys(attribution["direction"]))
    fig = make_subplots(rows=1, cols=len(dirs), subplot_titles=dirs)
    seen: set[str] = set()
    for i, d in enumerate(dirs, 1):
        a = attribution[attribution["direction"] == d]
        lo = float(min(a["exact_effect"].min(), a["attribution_effect"].min()))
        hi = float(max(a["exact_effect"].max(), a["attribution_effect"].max()))
        fig.add_trace(go.Scatter(x=[lo, hi], y=[lo, hi], mode="lines", name="equal",
                                 showlegend=i == 1, line={"color": "#888", "dash": "dot"}),
                      row=1, col=i)
        for j, (kind, g) in enumerate(a.groupby("group", sort=False)):
            fig.add_trace(go.Scatter(x=g["exact_effect"], y=g["attribution_effect"],
                                     mode="markers", name=str(kind), legendgroup=str(kind),
                                     showlegend=str(kind) not in seen, text=g["cell"],
                                     marker={"size": 6, "opacity": 0.7,
                                             "color": COLORS[j % len(COLORS)]}),
                          row=1, col=i)
            seen.add(str(kind))
        fig.update_xaxes(title_text=f"exact effect ({unit})", row=1, col=i)
        fig.update_yaxes(title_text=f"attribution estimate ({unit})", row=1, col=i)
    fig.update_layout(height=420, width=500 * len(dirs) + 150, margin={"t": 50})
    return fig
