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
    """Attention–posterior consistency and r(attention per occurrence, posterior) per
    layer × head: trained beside random init."""
    titles = ["consistency: trained", "consistency: random init", "r: trained", "r: random init"]
    fig = make_subplots(rows=2, cols=2, subplot_titles=titles, vertical_spacing=0.15)
    for i, key in enumerate(("consistency", "consistency_random_init", "r", "r_random_init")):
        w = heads.pivot(index="layer", columns="head", values=key)
        corr = key.startswith("r")
        fig.add_trace(go.Heatmap(z=w.to_numpy(), x=[f"h{h}" for h in w.columns],
                                 y=[f"L{L}" for L in w.index], zmin=-1 if corr else 0, zmax=1,
                                 colorscale="RdBu" if corr else "Viridis",
                                 showscale=i % 2 == 1), row=i // 2 + 1, col=i % 2 + 1)
    fig.update_layout(height=700, width=1000, margin={"t": 50})
    return fig


def deviation_figure(groups: pd.DataFrame, group_name: str, column: str, what: str,
                     ) -> go.Figure:
    """A per-prompt TV (``column``) per group: median with the 10–90 % band."""
    fig = go.Figure()
    x = groups[group_name]
    fig.add_trace(go.Scatter(x=x, y=groups[f"{column}_90%"], mode="lines", line={"width": 0},
                             showlegend=False))
    fig.add_trace(go.Scatter(x=x, y=groups[f"{column}_10%"], mode="lines", fill="tonexty",
                             line={"width": 0}, name="10–90 %"))
    fig.add_trace(go.Scatter(x=x, y=groups[f"{column}_50%"], mode="lines+markers",
                             name="median"))
    fig.update_xaxes(title_text=group_name)
    fig.update_yaxes(title_text=what)
    fig.update_layout(height=380, width=700, margin={"t": 30})
    return fig


def _n(x: float, digits: int = 3) -> str:
    return "undefined" if x != x else f"{x:.{digits}f}"


def format_summary(res: ConsistencyResult) -> str:
    a = res.attention
    lines = [f"{res.model} on {res.task} · {res.n_prompts} prompts, {res.n_hypotheses} "
             f"hypotheses · random-init twin seed {res.twin_seed}",
             "ATTENTION–POSTERIOR CONSISTENCY (headline): per head 1 − mean TV between its "
             "attention mass over the shown hypotheses, renormalised, and the exact posterior "
             "renormalised over them",
             f"  best head {a.best_head or '—'}: {_n(a.consistency)} · random-init twin's best "
             f"head {_n(a.random_init)} · uniform attention {_n(a.uniform)}",
             f"  defined on {a.n_defined} of {res.n_prompts} prompts"
             + (f" (mean posterior mass on the shown hypotheses {a.shown_posterior_mass:.3f})"
                if a.n_defined else "")]
    if a.reason:
        lines.append(f"  undefined: {a.reason}")
    else:
        q = a.head_quantiles
        lines.append(f"  over heads: 10/50/90 % = {_n(q[0])} / {_n(q[1])} / {_n(q[2])}; best "
                     "per layer: " + ", ".join(f"L{L} {_n(v)}" for L, v in
                                                zip(a.layers, a.layer_best, strict=True)))
    lines += ["OUTPUT CALIBRATION (beside it): 1 − mean TV of the next-token distribution "
              "renormalised over the K hypotheses",
              f"  {'output of':<22} {'calibration':>11} {'mean TV':>8} {'KL bits':>9}"]
    for o in res.outputs:
        lines.append(f"  {o.source:<22} {o.calibration:>11.4f} {o.mean_tv:>8.4f} "
                     f"{o.mean_kl_bits:>9.4f}")
    top = sorted(res.heads, key=lambda h: -abs(h.r) if h.r == h.r else 0)[:5]
    lines.append("heads by |r(attention per shown hypothesis token, posterior)| (random init; "
                 "p_Holm):")
    lines += [f"  L{h.layer}.H{h.head}: r {h.r:+.3f} ({h.r_random_init:+.3f}; "
              f"{h.p_holm:.3g}){'  carries' if h.carries else ''}" for h in top]
    if all(h.r != h.r for h in res.heads):
        lines.append("r is undefined for every head: the posterior does not vary over the "
                     "hypotheses the prompts show (bijection: every shown value is ruled out)")
    lines.append(f"carry the posterior (r test): {', '.join(res.carriers) or 'none'}")
    return "\n".join(lines)


def write_report(path: Path, res: ConsistencyResult, heads: pd.DataFrame, groups: pd.DataFrame,
                 manifest: dict[str, Any]) -> Path:
    return html_report(path, f"Bayesian consistency — {res.model} on {res.task}", [
        ("Summary", format_summary(res)),
        (f"Best head's attention TV per {res.group_name}",
         deviation_figure(groups, res.group_name, "best_head_attn_tv",
                          "TV(best head's attention, posterior)")),
        ("Attention–posterior consistency and r with the posterior, per head",
         heads_figure(heads)),
        (f"Output calibration: TV per {res.group_name}",
         deviation_figure(groups, res.group_name, "tv", "TV(model output, posterior)")),
        ("Heads", heads),
        ("Per group", groups),
    ], manifest)
