"""Figures, table and terminal view of ``bayesgeom extrapolate``
(:mod:`analyses.extrapolate.run`)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pandas as pd
import plotly.graph_objects as go
from plotly.subplots import make_subplots

from ..kit.html import COLORS, html_report
from .result import ExtrapolationResult


def curves_figure(table: pd.DataFrame) -> go.Figure:
    """Accuracy and KL against the length multiple, one line per scheme; the Bayes accuracy
    and chance dashed."""
    fig = make_subplots(rows=1, cols=2, subplot_titles=["accuracy", "KL(p_Bayes ‖ p_model), bits"])
    for i, (arch, g) in enumerate(table.groupby("arch", sort=False)):
        c = COLORS[i % len(COLORS)]
        fig.add_trace(go.Scatter(x=g["multiple"], y=g["accuracy"], name=str(arch),
                                 mode="lines+markers", line={"color": c}, legendgroup=str(arch)),
                      row=1, col=1)
        fig.add_trace(go.Scatter(x=g["multiple"], y=g["kl_bits"], name=str(arch),
                                 mode="lines+markers", line={"color": c}, showlegend=False,
                                 legendgroup=str(arch)), row=1, col=2)
    ref = table.groupby("multiple", sort=True)[["bayes_accuracy", "chance"]].mean()
    for col, dash in (("bayes_accuracy", "dash"), ("chance", "dot")):
        fig.add_trace(go.Scatter(x=ref.index, y=ref[col], name=col.replace("_", " "),
                                 mode="lines", line={"color": "#777", "dash": dash}),
                      row=1, col=1)
    for col in (1, 2):
        fig.update_xaxes(type="log", title_text="evaluation length / training length",
                         row=1, col=col)
    fig.update_yaxes(type="log", row=1, col=2)
    fig.update_layout(height=420, width=1050, margin={"t": 50})
    return fig


def wide_table(table: pd.DataFrame) -> pd.DataFrame:
    """Scheme × multiple accuracy, with the Bayes accuracy row."""
    w = table.pivot(index="arch", columns="multiple", values="accuracy")
    bayes = table.groupby("multiple")["bayes_accuracy"].mean().rename("Bayes (ceiling)")
    w = pd.concat([w, bayes.to_frame().T])
    w.columns = [f"×{m}" for m in w.columns]
    return w.reset_index(names="scheme")


def format_summary(res: ExtrapolationResult) -> str:
    lines = [f"long_recall, trained at L = {res.length} (noise {res.noise}), {res.preset}, "
             f"{res.steps} steps; {res.n_eval} held-out sequences per cell",
             f"extrapolation ratio: largest m with accuracy within {res.tolerance} of m = 1",
             f"{'scheme':<16} {'acc ×1':>7} {'acc ×' + str(max(res.multiples)):>9} "
             f"{'ratio':>6}"]
    for s in res.schemes:
        lines.append(f"{s.arch:<16} {s.accuracy_at_1:>7.3f} {s.accuracy_at_max:>9.3f} "
                     f"{s.ratio:>6}")
    lines.append(f"claim beside it: {res.bam_claim}")
    return "\n".join(lines)


def write_report(path: Path, res: ExtrapolationResult, table: pd.DataFrame,
                 manifest: dict[str, Any]) -> Path:
    return html_report(path, "Length extrapolation by positional scheme", [
        ("Summary", format_summary(res)),
        ("Accuracy and calibration against length, with the Bayes ceiling and chance",
         curves_figure(table)),
        ("Accuracy (scheme × length multiple)", wide_table(table)),
        ("Every cell", table),
    ], manifest)
