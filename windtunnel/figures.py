"""Plotly figures for wind-tunnel runs (self-contained HTML, opens offline)."""

from __future__ import annotations

from pathlib import Path

import pandas as pd
import plotly.graph_objects as go
from plotly.subplots import make_subplots

from ..records import write_text
from .metrics import CalibrationReport


def training_figures(path: Path, log: pd.DataFrame, rep: CalibrationReport, title: str) -> Path:
    """Learning curves and the per-position entropy calibration in one HTML file."""
    fig = make_subplots(
        rows=1,
        cols=2,
        subplot_titles=("held-out entropy MAE (bits)", "entropy per position (bits)"),
    )
    ev = log.dropna(subset=["eval_entropy_mae_bits"])
    fig.add_trace(
        go.Scatter(
            x=ev["step"], y=ev["eval_entropy_mae_bits"], name="per-sample MAE", mode="lines+markers"
        ),
        row=1,
        col=1,
    )
    pp = rep.per_position
    pos = list(range(1, len(pp["h_bayes_bits"]) + 1))
    fig.add_trace(
        go.Scatter(x=pos, y=pp["h_bayes_bits"], name="Bayes", mode="lines+markers"), row=1, col=2
    )
    fig.add_trace(
        go.Scatter(
            x=pos, y=pp["h_model_bits"], name="model", mode="lines+markers", line={"dash": "dash"}
        ),
        row=1,
        col=2,
    )
    fig.update_yaxes(type="log", row=1, col=1)
    fig.update_xaxes(title_text="step", row=1, col=1)
    fig.update_xaxes(title_text="supervised position", row=1, col=2)
    fig.update_layout(title=title, template="plotly_white", height=420)
    return write_text(path, fig.to_html(include_plotlyjs=True, full_html=True))
