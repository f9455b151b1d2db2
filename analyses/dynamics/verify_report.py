"""Figures, table and terminal view of ``bayesgeom dynamics verify``
(:mod:`analyses.dynamics.verify`)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd
import plotly.graph_objects as go
from plotly.subplots import make_subplots

from ..kit.findings import Finding, findings_text, sig
from ..kit.html import COLORS, html_report
from .verify_result import CONTROLS, IDENTITIES, IdentityCheck, VerifyResult

FLOOR = 1e-17  # exact zeros are drawn here on the log axis


def errors_figure(table: pd.DataFrame, tolerance: float) -> go.Figure:
    """log10 error of every (layer, head) per identity, controls last, the tolerance dashed."""
    names = [*IDENTITIES, *CONTROLS]
    fig = go.Figure()
    for i, name in enumerate(names):
        sub = table[table["identity"] == name]
        fig.add_trace(go.Box(
            y=np.log10(np.maximum(sub["error"].to_numpy(), FLOOR)), name=name,
            boxpoints="all", jitter=0.4, pointpos=0, marker={"size": 4},
            line={"color": "#999" if name in CONTROLS else COLORS[i % len(COLORS)]},
            text=[f"layer {a}, head {b}" for a, b in zip(sub["layer"], sub["head"],
                                                         strict=True)]))
    fig.add_hline(y=np.log10(tolerance), line_dash="dash",
                  annotation_text=f"tolerance {tolerance:g}")
    fig.update_yaxes(title_text="log10 error (relative; masked entries absolute)")
    fig.update_layout(height=460, width=1050, showlegend=False, margin={"t": 30})
    return fig


def value_step_figure(steps: pd.DataFrame) -> go.Figure:
    """Identity 5: |1 − ratio| against ε, one line per layer (log-log)."""
    fig = make_subplots(rows=1, cols=1)
    for i, (L, g) in enumerate(steps.groupby("layer")):
        fig.add_trace(go.Scatter(x=g["epsilon"], y=g["gap"].clip(lower=FLOOR),
                                 mode="lines+markers", name=f"layer {L}",
                                 line={"color": COLORS[i % len(COLORS)]}))
    fig.update_xaxes(type="log", title_text="ε (first-order loss change / L)")
    fig.update_yaxes(type="log", title_text="|1 − measured / first-order change|")
    fig.update_layout(height=380, width=700, margin={"t": 30})
    return fig


def _verdict(c: IdentityCheck) -> str:
    """pass/fail of one check: a control says so; a corollary names what it follows from."""
    if c.control:
        return "control"
    v = "yes" if c.passed else "NO"
    if c.corollary_of is not None:
        item = IDENTITIES[c.corollary_of][2]
        return f"{v} (corollary of {item}, not independent)"
    return v


def checks_table(res: VerifyResult) -> pd.DataFrame:
    return pd.DataFrame([{
        "identity": c.identity, "formula": c.formula, "per": c.per, "spec §2.2": c.spec_item,
        "max error": c.max_error, "worst (layer, head)": f"({c.worst_layer}, {c.worst_head})",
        "passes": _verdict(c)} for c in res.checks])


def _law_finding(res: VerifyResult, identity: str, control: str, claim: str) -> Finding:
    """One identity held against its deliberately wrong law and the tolerance."""
    by = {c.identity: c for c in res.checks}
    c, wrong = by[identity], by[control]
    power = ("above" if wrong.max_error > res.tolerance else "NOT above")
    evidence = (f"passes iff max error ≤ tolerance {res.tolerance:g}; worst at layer "
                f"{c.worst_layer}, head {c.worst_head}; the wrong law's error is {power} the "
                "tolerance" + ("" if wrong.max_error > res.tolerance
                               else ", so the check has no power here"))
    rows = by["score_rows_sum_zero"]
    if identity == "routing_law" and not c.passed and c.max_error <= 2 * rows.max_error:
        evidence += (f"; autograd's own ∂L/∂s rows miss zero by {sig(rows.max_error)}: the "
                     "reference, not the law, sets this error")
    heads = res.n_heads if c.per == "query head" else res.n_kv_heads
    return Finding(f"{claim} (Paper II §2.2 item {c.spec_item}: {c.formula}; max relative "
                   f"error over {len(res.layers)} layers × {heads} {c.per}s)", c.max_error,
                   control=f"wrong law {CONTROLS[control][0]}: error {sig(wrong.max_error)}",
                   survives=c.passed, evidence=evidence,
                   undefined="a head's autograd gradient is all zero (0 / 0)")


def findings(res: VerifyResult) -> list[Finding]:
    """The verdict table: the advantage routing law and the responsibility-weighted value
    update, each against its deliberately wrong law; all independent identities; the value
    step's first-order check (identity 5, which has no pass/fail criterion in the run)."""
    out = [
        _law_finding(res, "routing_law", "routing_law_without_baseline",
                     "score gradient follows the advantage routing law"),
        _law_finding(res, "value_grad", "value_grad_without_responsibilities",
                     "value gradient is the responsibility-weighted upstream error"),
    ]
    failed = [c.identity for c in res.checks
              if not c.control and c.corollary_of is None and not c.passed]
    worst = max((c.max_error for c in res.checks if not c.control), default=float("nan"))
    out.append(Finding(
        f"every independent §2.2 identity holds in every checked head ({res.dtype}, "
        f"{res.loss_kind} loss; feedback, item 6, is a corollary of item 3 and not counted)",
        res.independent_passed, control=f"tolerance {res.tolerance:g} on each identity's max "
        f"relative error", survives=res.all_passed, unit=f"of {res.independent_checked} pass",
        evidence=f"largest error of any identity {sig(worst)}"
        + (f"; failing: {', '.join(failed)}" if failed else "")))
    if res.value_step:
        eps = min(res.value_step, key=float)
        gap = res.value_step[eps]
        trend = ", ".join(f"ε={e}: {sig(g)}" for e, g in res.value_step.items())
        out.append(Finding(
            f"a value-only step changes the loss by its first-order prediction (§2.2 item 5; "
            f"|1 − ratio| at the smallest step, ε = {eps})", gap,
            control="should shrink towards 0 as ε → 0", survives=None,
            evidence=f"the run sets no threshold for item 5; by ε: {trend}",
            undefined="" if np.isfinite(gap) else "the value gradient is zero"))
    return out


def format_summary(res: VerifyResult) -> str:
    """Terminal view: the verdict table, then :func:`details_text`."""
    return findings_text(findings(res)) + "\n\n" + details_text(res)


def details_text(res: VerifyResult) -> str:
    """One line per identity: its largest error over heads and layers, and pass/fail."""
    lines = [f"{res.model} ({res.family}, {res.dtype}) · {res.loss_kind} loss {res.loss:.4f} "
             f"nats · {res.n_prompts} prompts, {res.n_tokens} tokens · layers "
             f"{res.layers[0]}..{res.layers[-1]} · {res.n_heads} query / {res.n_kv_heads} kv "
             f"heads",
             f"error = max|pred − autograd| / max|autograd| per head; tolerance "
             f"{res.tolerance:g}",
             f"{'identity':<36} {'max error':>10}  worst (L, h)  passes"]
    for c in res.checks:
        verdict = _verdict(c)
        lines.append(f"{c.identity:<36} {c.max_error:>10.2e}  ({c.worst_layer:>2}, "
                     f"{c.worst_head:>2})     {verdict}")
    by = {c.identity: c for c in res.checks}
    law, rows = by["routing_law"], by["score_rows_sum_zero"]
    if not law.passed and law.max_error <= 2 * rows.max_error:
        lines.append(f"note: autograd's own dL/ds rows miss zero by {rows.max_error:.1e}; the "
                     f"reference, not the law, sets the routing law's {law.max_error:.1e} (the "
                     "kernel's float32 softmax backward, cancelling a large E_α[b])")
    lines.append("value step (identity 5), max over layers of |1 − ratio|: " + ", ".join(
        f"ε={e}: {g:.2e}" for e, g in res.value_step.items()))
    cors = [c for c in res.checks if c.corollary_of is not None]
    for c in cors:
        lines.append(f"note: {c.identity} (spec §2.2 item {c.spec_item}) is u_iᵀ times identity "
                     f"{IDENTITIES[c.corollary_of][2]} ({c.corollary_of}) at fixed u: a "
                     "corollary, not an independent check, and not counted below")
    counted = f"{res.independent_passed}/{res.independent_checked} independent identities pass"
    lines.append(f"all {counted}" if res.all_passed else f"SOME IDENTITIES FAIL: {counted}")
    return "\n".join(lines)


def write_report(path: Path, res: VerifyResult, table: pd.DataFrame, steps: pd.DataFrame,
                 manifest: dict[str, Any]) -> Path:
    """``report.html``: the verdict table, then the figures and tables."""
    return html_report(path, f"Paper II identities — {res.model}", findings(res), [
        ("Every head and layer: error of each identity (grey: deliberately wrong laws)",
         errors_figure(table, res.tolerance),
         "Look for: every coloured identity's points below the dashed tolerance line and the "
         "two grey wrong laws far above it; each box is one identity (x axis), each point one "
         "(layer, head), hover for which."),
        ("Identities", checks_table(res)),
        ("Value step: measured over first-order loss change", value_step_figure(steps),
         "Look for: each layer's line falling as ε shrinks (leftwards), about straight on these "
         "log axes: the first-order prediction becomes exact as the step shrinks."),
        ("Value steps", steps),
        ("Every identity in the terminal's words", details_text(res)),
    ], manifest)
