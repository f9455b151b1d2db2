"""Verdict table, figures, tables and terminal view of ``bayesgeom verify``
(:mod:`analyses.verify.run`).

:func:`findings` holds the headline -- the best head's attention–posterior consistency --
against the random-init twin's best head (the same selection over as many heads) and uniform
attention; the heads that carry the posterior by the run's own permutation test (Holm-adjusted
p below ``--alpha`` and |r| at least ``--min-r``); and the output calibration beside them,
against the twin and the group-mean baseline. Consistency and calibration have no significance
test in the run, so they survive when they beat both of their controls (the rule ``bayesgeom
monitor`` applies to its rows).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pandas as pd
import plotly.graph_objects as go
from plotly.subplots import make_subplots

from ..kit.findings import Finding, findings_text, sig
from ..kit.html import COLORS, html_report
from .result import ConsistencyResult

#: the criterion of a claim the run has no test for
RULE = "criterion: above both controls (monitor's beats-both rule); no significance test"


def _attention_finding(res: ConsistencyResult) -> Finding:
    a = res.attention
    claim = ("attention weighs the shown hypotheses as the exact posterior does (best head's "
             "consistency, 1 − mean TV, probes.posterior_consistency)")
    if a.consistency != a.consistency:
        return Finding(claim, None, control="random-init twin's best head; uniform attention",
                       undefined=a.reason or "no prompt shows two hypotheses with posterior "
                       "mass", evidence=f"defined on {a.n_defined} of {res.n_prompts} prompts")
    return Finding(
        claim + f": {a.best_head}", a.consistency,
        control=f"random-init twin's best head {sig(a.random_init)}; uniform attention "
                f"{sig(a.uniform)}",
        survives=bool(a.consistency > a.random_init and a.consistency > a.uniform),
        evidence=f"gap {a.consistency - a.random_init:+.3g} over the twin; defined on "
                 f"{a.n_defined} of {res.n_prompts} prompts; the twin's best is selected over "
                 f"as many heads; {RULE}")


def _carrier_finding(res: ConsistencyResult) -> Finding:
    claim = ("heads carry the posterior (r of attention per shown hypothesis with the posterior, "
             "within-group permutation test, Holm over every head)")
    finite = [h for h in res.heads if h.r == h.r]
    control = "within-group permuted posteriors; random-init twin's r"
    if not finite:
        return Finding(claim, None, control=control,
                       undefined="r is undefined for every head: the posterior does not vary "
                       "over the hypotheses the prompts show")
    top = max(finite, key=lambda h: abs(h.r))
    return Finding(
        claim, len(res.carriers), unit=f"of {len(res.heads)} heads",
        control=f"{control} {top.r_random_init:+.3g} at L{top.layer}.H{top.head}",
        survives=bool(res.carriers),
        evidence=f"strongest L{top.layer}.H{top.head}: r {top.r:+.3g}, p (Holm) "
                 f"{sig(top.p_holm)}; criterion: p (Holm) < --alpha and |r| ≥ --min-r"
                 + (f"; carriers {', '.join(res.carriers)}" if res.carriers else ""))


def findings(res: ConsistencyResult) -> list[Finding]:
    """The verdict rows (module doc): attention consistency, posterior-carrying heads, output
    calibration."""
    out = {o.source: o for o in res.outputs}
    m, tw, g = out["model"], out["random_init"], out["group_mean_baseline"]
    return [_attention_finding(res), _carrier_finding(res), Finding(
        "the output is calibrated to the exact posterior (1 − mean TV of the next token "
        "renormalised over the K hypotheses; beside the headline)", m.calibration,
        control=f"random-init twin {sig(tw.calibration)}; group-mean baseline "
                f"({res.group_name} alone) {sig(g.calibration)}",
        survives=bool(m.calibration > tw.calibration and m.calibration > g.calibration),
        evidence=f"gap {m.calibration - tw.calibration:+.3g} over the twin, "
                 f"{m.calibration - g.calibration:+.3g} over the baseline; KL "
                 f"{sig(m.mean_kl_bits)} bits (twin {sig(tw.mean_kl_bits)}, baseline "
                 f"{sig(g.mean_kl_bits)}); {RULE}")]


def heads_figure(heads: pd.DataFrame) -> go.Figure:
    """Attention–posterior consistency and r(attention per occurrence, posterior) per
    layer × head: trained beside random init; one colour bar per row (consistency 0 to 1,
    r −1 to 1)."""
    titles = ["consistency: trained", "consistency: random-init twin", "r: trained",
              "r: random-init twin"]
    fig = make_subplots(rows=2, cols=2, subplot_titles=titles, vertical_spacing=0.15)
    for i, key in enumerate(("consistency", "consistency_random_init", "r", "r_random_init")):
        w = heads.pivot(index="layer", columns="head", values=key)
        corr = key.startswith("r")
        bar = {"title": {"text": "r" if corr else "consistency"}, "len": 0.42,
               "y": 0.2 if corr else 0.8}
        fig.add_trace(go.Heatmap(z=w.to_numpy(), x=[f"h{h}" for h in w.columns],
                                 y=[f"L{L}" for L in w.index], zmin=-1 if corr else 0, zmax=1,
                                 colorscale="RdBu" if corr else "Viridis", name=titles[i],
                                 colorbar=bar, showscale=i % 2 == 1),
                      row=i // 2 + 1, col=i % 2 + 1)
    fig.update_layout(height=700, width=1000, margin={"t": 50})
    return fig


def deviation_figure(groups: pd.DataFrame, group_name: str, column: str, what: str,
                     control: str | None = None, control_name: str = "") -> go.Figure:
    """A per-prompt TV (``column``) per group: median with the 10–90 % band, and the median of
    a ``control`` column dashed beside it."""
    fig = go.Figure()
    x = groups[group_name]
    fig.add_trace(go.Scatter(x=x, y=groups[f"{column}_90%"], mode="lines", line={"width": 0},
                             showlegend=False, hoverinfo="skip"))
    fig.add_trace(go.Scatter(x=x, y=groups[f"{column}_10%"], mode="lines", fill="tonexty",
                             line={"width": 0, "color": COLORS[0]}, name="10–90 % of prompts"))
    fig.add_trace(go.Scatter(x=x, y=groups[f"{column}_50%"], mode="lines+markers",
                             line={"color": COLORS[0]}, name="median"))
    if control is not None and f"{control}_50%" in groups:
        fig.add_trace(go.Scatter(x=x, y=groups[f"{control}_50%"], mode="lines",
                                 line={"color": "#777", "dash": "dash"},
                                 name=f"{control_name} (median)"))
    fig.update_xaxes(title_text=group_name)
    fig.update_yaxes(title_text=what)
    fig.update_layout(height=380, width=700, margin={"t": 30})
    return fig


def _n(x: float, digits: int = 3) -> str:
    return "undefined" if x != x else f"{x:.{digits}f}"


def format_summary(res: ConsistencyResult) -> str:
    """The verdict table (:func:`findings`), then the per-head view (:func:`details_text`)."""
    return findings_text(findings(res)) + "\n\n" + details_text(res)


def details_text(res: ConsistencyResult) -> str:
    """The headline with its controls, output calibration per source and the top heads."""
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
    top = sorted((h for h in res.heads if h.r == h.r), key=lambda h: -abs(h.r))[:5]
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
    a, g = res.attention, res.group_name
    undefined = (f" Here the attention is undefined ({a.reason}), so the panel is empty."
                 if a.consistency != a.consistency else "")
    return html_report(path, f"Bayesian consistency — {res.model} on {res.task}", findings(res), [
        ("The run", f"{res.model} on {res.task}: {res.n_prompts} prompts, {res.n_hypotheses} "
                    f"hypotheses, grouped by {g}; random-init twin seed {res.twin_seed}. "
                    "Consistency = 1 − mean TV between a head's attention over the shown "
                    "hypotheses (renormalised) and the exact posterior renormalised over them; "
                    "calibration = 1 − mean TV of the next-token distribution renormalised "
                    "over the K hypotheses."),
        (f"Best head's attention TV per {g}",
         deviation_figure(groups, g, "best_head_attn_tv", "TV(best head's attention, posterior)",
                          "uniform_attn_tv", "uniform attention"),
         f"Look for: the median (blue) well below the dashed uniform-attention line at every {g}; "
         f"0 is attention equal to the posterior.{undefined}"),
        ("Attention–posterior consistency and r with the posterior, per head",
         heads_figure(heads),
         "Look for: heads brighter in the trained panels (left) than at the same place in the "
         "random-init twin's (right); in the r row, strong red or blue marks a head whose "
         "attention tracks the posterior. Blank cells are undefined."),
        (f"Output calibration: TV per {g}",
         deviation_figure(groups, g, "tv", "TV(model output, posterior)"),
         f"Look for: the median near 0 (output equal to the posterior) at every {g}, and where "
         "the 10–90 % band widens."),
        ("Heads", heads),
        ("Per group", groups),
    ], manifest)
