"""Figures, tables and terminal view of ``bayesgeom verify`` (:mod:`analyses.verify.run`)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pandas as pd
import plotly.graph_objects as go
from plotly.subplots import make_subplots

from ..kit.html import html_report
from .result import ConsistencyResult


def heads_figure(heads: pd.DataFrame) -> go.Figure:
    """r(hypothesis mass, posterior) per layer × head: trained beside random init."""
    fig = make_subplots(rows=1, cols=2, subplot_titles=["trained", "random init"])
    for col, key in enumerate(("r", "r_random_init"), start=1):
        w = heads.pivot(index="layer", columns="head", values=key)
        fig.add_trace(go.Heatmap(z=w.to_numpy(), x=[f"h{h}" for h in w.columns],
                                 y=[f"L{L}" for L in w.index], zmin=-1, zmax=1,
                                 colorscale="RdBu", showscale=col == 2), row=1, col=col)
    fig.update_layout(height=420, width=1000, margin={"t": 50})
    return fig


def deviation_figure(groups: pd.DataFrame, group_name: str) -> go.Figure:
    """TV between the model and the posterior per group: median with the 10–90 % band."""
    fig = go.Figure()
    x = groups[group_name]
    fig.add_trace(go.Scatter(x=x, y=groups["tv_90%"], mode="lines", line={"width": 0},
                             showlegend=False))
    fig.add_trace(go.Scatter(x=x, y=groups["tv_10%"], mode="lines", fill="tonexty",
                             line={"width": 0}, name="10–90 %"))
    fig.add_trace(go.Scatter(x=x, y=groups["tv_50%"], mode="lines+markers", name="median"))
    fig.update_xaxes(title_text=group_name)
    fig.update_yaxes(title_text="TV(model, posterior)")
    fig.update_layout(height=380, width=700, margin={"t": 30})
    return fig


def format_summary(res: ConsistencyResult) -> str:
    lines = [f"{res.model} on {res.task} · {res.n_prompts} prompts, {res.n_hypotheses} "
             "hypotheses · score = 1 − mean TV(model, exact posterior)",
             f"{'output of':<22} {'score':>7} {'mean TV':>8} {'KL bits':>9}"]
    for o in res.outputs:
        lines.append(f"{o.source:<22} {o.consistency:>7.4f} {o.mean_tv:>8.4f} "
                     f"{o.mean_kl_bits:>9.4f}")
    top = sorted(res.heads, key=lambda h: -abs(h.r) if h.r == h.r else 0)[:5]
    lines.append("heads by |r(attention per shown hypothesis token, posterior)| (random init; "
                 "p_Holm):")
    lines += [f"  L{h.layer}.H{h.head}: r {h.r:+.3f} ({h.r_random_init:+.3f}; "
              f"{h.p_holm:.3g}){'  carries' if h.carries else ''}" for h in top]
    if all(h.r != h.r for h in res.heads):
        lines.append("r is undefined for every head: the posterior does not vary over the "
                     "hypotheses the prompts show (bijection: every shown value is ruled out)")
    lines.append(f"carry the posterior: {', '.join(res.carriers) or 'none'}")
    return "\n".join(lines)


def write_report(path: Path, res: ConsistencyResult, heads: pd.DataFrame, groups: pd.DataFrame,
                 manifest: dict[str, Any]) -> Path:
    return html_report(path, f"Bayesian consistency — {res.model} on {res.task}", [
        ("Summary", format_summary(res)),
        (f"Output deviation per {res.group_name}", deviation_figure(groups, res.group_name)),
        ("Which heads read the hypotheses (r with the posterior)", heads_figure(heads)),
        ("Heads", heads),
        ("Per group", groups),
    ], manifest)
