"""Figures, tables, terminal view and report of ``bayesgeom dynamics verify``
(:mod:`analyses.dynamics.verify.run`); its verdict table is :mod:`.findings`."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd
import plotly.graph_objects as go
from plotly.subplots import make_subplots

from ...kit.findings import findings_text
from ...kit.html import COLORS, html_report
from .findings import findings
from .result import CONTROLS, IDENTITIES, DynamicsVerifyResult, IdentityCheck

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


def checks_table(res: DynamicsVerifyResult) -> pd.DataFrame:
    return pd.DataFrame([{
        "identity": c.identity, "formula": c.formula, "per": c.per, "spec §2.2": c.spec_item,
        "max error": c.max_error, "worst (layer, head)": f"({c.worst_layer}, {c.worst_head})",
        "passes": _verdict(c)} for c in res.checks])


def format_summary(res: DynamicsVerifyResult) -> str:
    """Terminal view: the verdict table, then :func:`details_text`."""
    return findings_text(findings(res)) + "\n\n" + details_text(res)


def details_text(res: DynamicsVerifyResult) -> str:
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


def write_report(path: Path, res: DynamicsVerifyResult, table: pd.DataFrame, steps: pd.DataFrame,
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
