"""Verdict table, figures, tables and terminal view of ``bayesgeom verify``
(:mod:`analyses.verify.run`).

:func:`findings` holds the headline -- the best head's attention–posterior consistency --
with its verdict made by the selection-aware controls (:func:`headline_verdict`: the
cross-fitted held-out score above uniform attention and the twin's, the observed best above
the best of as many random Dirichlet heads and re-dealt heads at ``--alpha``, and the in-sample
best above the twin's best head and uniform attention), the best head's attention share on the
hypothesis tokens beside it; the heads that carry the posterior by the run's own permutation
test (Holm-adjusted p below ``--alpha`` and |r| at least ``--min-r``); and the output
calibration beside them, against the twin and the group-mean baseline. Calibration has no
significance test in the run, so it survives when it beats both of its controls (the rule
``bayesgeom monitor`` applies to its rows).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pandas as pd
import plotly.graph_objects as go
from plotly.subplots import make_subplots

from ..kit.findings import VERDICTS, Finding, findings_text
from ..kit.html import COLORS, html_report
from ..kit.learned import gate
from ..kit.numbers import fixed, pct, sig
from .result import AttentionConsistency, VerifyResult

#: the criterion of a claim the run has no test for
RULE = "criterion: above both controls (monitor's beats-both rule); no significance test"


def selection_checks(a: AttentionConsistency) -> list[tuple[str, bool, str]]:
    """The selection-aware controls of the headline (:mod:`probes.selection_control`), each
    (name, beaten, how): the cross-fitted held-out score against uniform attention and
    against the twin's heads cross-fitted alike, and the observed best against the best of as
    many random Dirichlet heads and of the model's heads re-dealt (p < alpha)."""
    out = [("cross-fitted held-out score vs uniform attention", a.held_out > a.uniform,
            f"{sig(a.held_out)} vs {sig(a.uniform)}"),
           ("cross-fitted held-out score vs the twin's, cross-fitted alike",
            a.held_out > a.held_out_twin, f"{sig(a.held_out)} vs {sig(a.held_out_twin)}")]
    for m in (a.random_heads, a.shuffled_heads):
        if m is not None:
            out.append((f"best head vs the best of {m.n_heads} {m.null}", bool(m.p < a.alpha),
                        f"{sig(a.consistency)} vs {sig(m.mean)} ± {sig(m.sd)}; p {sig(m.p)}, "
                        f"level {sig(a.alpha)}"))
    return out


def headline_verdict(a: AttentionConsistency) -> tuple[bool | None, str]:
    """(survives, which control decided): no verdict where the held-out score is undefined
    (too few prompts to split); otherwise it survives only when every selection-aware control
    (:func:`selection_checks`) and both in-sample controls (the twin's best head, uniform
    attention) are beaten. A failing verdict names the controls that decided it; a surviving
    one names the closest (the smallest held-out margin over uniform, the largest p)."""
    if a.consistency != a.consistency:
        return None, ""
    if a.held_out != a.held_out:
        return None, (f"no verdict: {a.n_defined} prompts count, too few to choose the head on "
                      "one half and score it on the other (the selection-aware control)")
    checks = selection_checks(a)
    checks.append(("in-sample vs the twin's best head and uniform",
                   bool(a.consistency > a.random_init and a.consistency > a.uniform),
                   f"{sig(a.consistency)} vs {sig(a.random_init)} and {sig(a.uniform)}"))
    failed = [f"{n} ({how})" for n, ok, how in checks if not ok]
    if failed:
        return False, "decided by: " + "; ".join(failed)
    nulls = [m for m in (a.random_heads, a.shuffled_heads) if m is not None]
    close = max(nulls, key=lambda m: m.p) if nulls else None
    return True, (f"every selection-aware control beaten; closest: the held-out score "
                  f"{a.held_out - a.uniform:+.3g} over uniform attention"
                  + (f", p {sig(close.p)} against the best of {close.n_heads} {close.null}"
                     if close is not None else ""))


def _controls_text(a: AttentionConsistency) -> str:
    parts = [f"selection-aware: the head chosen on half the prompts, scored on the other "
             f"(cross-fitted, {a.n_splits} splits) {sig(a.held_out)}, the twin's "
             f"{sig(a.held_out_twin)}"]
    parts += [f"the best of {m.n_heads} {m.null} {sig(m.mean)} ± {sig(m.sd)} (its "
              f"{sig(100 * (1 - a.alpha))} % quantile {sig(m.quantile)})"
              for m in (a.random_heads, a.shuffled_heads) if m is not None]
    parts.append(f"uniform attention {sig(a.uniform)}; the random-init twin's best head "
                 f"(in-sample) {sig(a.random_init)}")
    return "; ".join(parts)


def _attention_finding(res: VerifyResult) -> Finding:
    a = res.attention
    claim = ("attention weighs the shown hypotheses as the exact posterior does (best head's "
             "consistency, 1 − mean TV, probes.posterior_consistency; in-sample)")
    if a.consistency != a.consistency:
        return Finding(claim, None, control="random-init twin's best head; uniform attention",
                       undefined=a.reason or "no prompt shows two hypotheses with posterior "
                       "mass", evidence=f"defined on {a.n_defined} of {res.n_prompts} prompts")
    survives, why = headline_verdict(a)
    return Finding(
        claim + f": {a.best_head}", a.consistency, control=_controls_text(a),
        survives=survives,
        evidence=f"{why}; {a.best_head} puts {pct(a.best_head_mass)} of its attention on the "
                 f"hypothesis tokens (uniform attention {pct(a.uniform_mass)}), which the "
                 f"renormalised score does not see; defined on {a.n_defined} of "
                 f"{res.n_prompts} prompts; the held-out halves fall "
                 f"{_gaps(a.held_out_gaps)} from uniform attention on the same half")


def _gaps(g: list[float]) -> str:
    return "undefined" if len(g) != 2 else f"{g[0]:+.3g} to {g[1]:+.3g}"


def _carrier_finding(res: VerifyResult) -> Finding:
    claim = ("heads carry the posterior (r of attention per shown hypothesis with the posterior, "
             "within-group permutation test, Holm over every head)")
    finite = [h for h in res.heads if h.r == h.r]
    control = "within-group permuted posteriors; random-init twin's r"
    if not finite:
        a = res.attention
        why = (a.reason if a.reason.startswith("no prompt shows a hypothesis token") else
               "the posterior does not vary over the hypotheses the prompts show")
        return Finding(claim, None, control=control,
                       undefined=f"r is undefined for every head: {why}")
    top = max(finite, key=lambda h: abs(h.r))
    return Finding(
        claim, len(res.carriers), unit=f"of {len(res.heads)} heads",
        control=f"{control} {top.r_random_init:+.3g} at L{top.layer}.H{top.head}",
        survives=bool(res.carriers),
        evidence=f"strongest L{top.layer}.H{top.head}: r {top.r:+.3g}, p (Holm) "
                 f"{sig(top.p_holm)}; criterion: p (Holm) < --alpha and |r| ≥ --min-r"
                 + (f"; carriers {', '.join(res.carriers)}" if res.carriers else ""))


def findings(res: VerifyResult) -> list[Finding]:
    """The verdict rows (module doc): attention consistency, posterior-carrying heads, output
    calibration."""
    out = {o.source: o for o in res.outputs}
    m, tw, g = out["model"], out["random_init"], out["group_mean_baseline"]
    return gate([_attention_finding(res), _carrier_finding(res), Finding(
        "the output is calibrated to the exact posterior (1 − mean TV of the next token "
        "renormalised over the K hypotheses; beside the headline)", m.calibration,
        control=f"random-init twin {sig(tw.calibration)}; group-mean baseline "
                f"({res.group_name} alone) {sig(g.calibration)}",
        survives=bool(m.calibration > tw.calibration and m.calibration > g.calibration),
        evidence=f"gap {m.calibration - tw.calibration:+.3g} over the twin, "
                 f"{m.calibration - g.calibration:+.3g} over the baseline; KL "
                 f"{sig(m.mean_kl_bits)} bits (twin {sig(tw.mean_kl_bits)}, baseline "
                 f"{sig(g.mean_kl_bits)}); {RULE}")], res.learned)


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


def format_summary(res: VerifyResult) -> str:
    """The verdict table (:func:`findings`), then the per-head view (:func:`details_text`)."""
    return findings_text(findings(res)) + "\n\n" + details_text(res)


def details_text(res: VerifyResult) -> str:
    """The headline with its controls, output calibration per source and the top heads."""
    a = res.attention
    lines = [f"{res.model} on {res.task} · {res.n_prompts} prompts, {res.n_hypotheses} "
             f"hypotheses · random-init twin seed {res.twin_seed}",
             "ATTENTION–POSTERIOR CONSISTENCY (headline): per head 1 − mean TV between its "
             "attention mass over the shown hypotheses, renormalised, and the exact posterior "
             "renormalised over them",
             f"  best head {a.best_head or '—'}: {fixed(a.consistency)} · random-init twin's best "
             f"head {fixed(a.random_init)} · uniform attention {fixed(a.uniform)}",
             f"  defined on {a.n_defined} of {res.n_prompts} prompts"
             + (f" (mean posterior mass on the shown hypotheses {a.shown_posterior_mass:.3f})"
                if a.n_defined else "")]
    if a.reason:
        lines.append(f"  undefined: {a.reason}")
    else:
        q = a.head_quantiles
        lines.append(f"  over heads: 10/50/90 % = {fixed(q[0])} / {fixed(q[1])} / "
                     f"{fixed(q[2])}; best per layer: " + ", ".join(f"L{L} {fixed(v)}" for L, v in
                                                zip(a.layers, a.layer_best, strict=True)))
    if a.consistency == a.consistency:
        survives, why = headline_verdict(a)
        lines += ["SELECTION-AWARE CONTROLS (they decide the headline's verdict)",
                  f"  in-sample best {fixed(a.consistency)} ({a.best_head}); cross-fitted "
                  f"held-out {fixed(a.held_out)} (range over {a.n_splits} splits "
                  f"{_gaps(a.held_out_range)}; the twin's {fixed(a.held_out_twin)}; halves vs "
                  f"uniform {_gaps(a.held_out_gaps)}; chosen head = {a.best_head} in "
                  f"{pct(a.pick_agreement)} of halves)"]
        lines += [f"  best of {m.n_heads} {m.null}: {fixed(m.mean)} ± {fixed(m.sd)} over "
                  f"{m.n_draws} draws ({sig(100 * (1 - a.alpha))} % quantile "
                  f"{fixed(m.quantile)}); observed best p {sig(m.p)}"
                  for m in (a.random_heads, a.shuffled_heads) if m is not None]
        lines += [f"  attention on the hypothesis tokens: {a.best_head} {pct(a.best_head_mass)} "
                  f"of its row; uniform attention {pct(a.uniform_mass)}",
                  f"  verdict: {VERDICTS[survives]}; {why}"]
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
    by_c = sorted((h for h in res.heads if h.consistency == h.consistency),
                  key=lambda h: -h.consistency)[:5]
    if by_c:
        lines.append("heads by consistency (in-sample; attention share on the hypothesis "
                     "tokens):")
        lines += [f"  L{h.layer}.H{h.head}: {h.consistency:.3f} ({pct(h.mass_defined)})"
                  for h in by_c]
    if all(h.r != h.r for h in res.heads):
        lines.append("r is undefined for every head: the posterior does not vary over the "
                     "hypotheses the prompts show (bijection: every shown value is ruled out)")
    lines.append(f"carry the posterior (r test): {', '.join(res.carriers) or 'none'}")
    return "\n".join(lines)


def selection_table(res: VerifyResult) -> pd.DataFrame:
    """The headline's controls, one a row: what it is, its number, whether it is beaten."""
    a = res.attention
    if a.consistency != a.consistency:
        return pd.DataFrame({"control": ["(undefined headline)"], "value": [a.reason],
                             "beaten": [""]})
    rows = [("best head, in-sample (" + a.best_head + ")", fixed(a.consistency), "—"),
            ("its attention share on the hypothesis tokens", pct(a.best_head_mass), "—"),
            ("uniform attention's share on them", pct(a.uniform_mass), "—")]
    rows += [(name, how, "yes" if ok else "no") for name, ok, how in selection_checks(a)]
    rows += [("the random-init twin's best head (in-sample)", fixed(a.random_init),
              "yes" if a.consistency > a.random_init else "no"),
             ("uniform attention (in-sample)", fixed(a.uniform),
              "yes" if a.consistency > a.uniform else "no")]
    return pd.DataFrame(rows, columns=["control", "value", "beaten"])


def write_report(path: Path, res: VerifyResult, heads: pd.DataFrame, groups: pd.DataFrame,
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
        ("Selection-aware controls", selection_table(res),
         "The verdict is made here (headline_verdict): the head chosen on half the prompts is "
         "scored on the other half (cross-fitted), and the best head is compared with the best "
         "of as many random Dirichlet heads and of the model's own heads with their attention "
         "re-dealt among the hypothesis occurrences. A best-of-heads score that does not beat "
         "these is what choosing among many heads gives by itself."),
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
