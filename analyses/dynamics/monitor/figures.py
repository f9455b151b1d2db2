"""The figures of a monitored run's ``dynamics.html``: the two timescales and every per-head
metric against the training step."""

from __future__ import annotations

import numpy as np
import pandas as pd
import plotly.graph_objects as go
from plotly.subplots import make_subplots

from ....probes.update_alignment import path_length_fraction, settle_step
from ...kit.html import COLORS
from .result import HEAD_METRICS
from .timescales import FRAME_METRIC, LEVEL, VALUE_METRIC, layer_means, lr_path


def timescale_figure(tidy: pd.DataFrame, level: float = LEVEL) -> go.Figure:
    """Cumulative path-length fraction of the patterns (solid) and values (dashed) per layer
    against the step, the ``level`` line and each curve's settle step marked."""
    fig = go.Figure()
    for metric, dash, label in ((FRAME_METRIC, "solid", "attention pattern"),
                                (VALUE_METRIC, "dash", "values")):
        wide = layer_means(tidy, metric)
        steps = wide.index.to_numpy()
        for i, layer in enumerate(wide.columns):
            colour = "#444444" if layer == "all" else COLORS[i % len(COLORS)]
            frac = path_length_fraction(wide[layer].to_numpy())
            name = f"{label}, {'all layers' if layer == 'all' else f'layer {layer}'}"
            fig.add_trace(go.Scatter(x=steps, y=frac, name=name, mode="lines",
                                     line={"color": colour, "dash": dash}))
            s = settle_step(steps, wide[layer].to_numpy(), level)
            if s is not None:
                fig.add_trace(go.Scatter(
                    x=[s], y=[frac[np.flatnonzero(steps == s)[0]]], mode="markers",
                    showlegend=False, marker={"symbol": "star", "size": 13, "color": colour},
                    hovertemplate=f"{name} reaches {level:.0%} at step {s}<extra></extra>"))
    lr = lr_path(tidy)
    if lr is not None:
        fig.add_trace(go.Scatter(x=lr.index, y=path_length_fraction(lr.to_numpy()),
                                 name="learning rate (Σ lr), the reference", mode="lines",
                                 line={"color": "#999999", "dash": "dot"}))
    fig.add_hline(y=level, line_dash="dot", annotation_text=f"{level:.0%} of the path")
    fig.update_xaxes(title_text="training step")
    fig.update_yaxes(title_text="cumulative path-length fraction", range=[0, 1.02])
    fig.update_layout(height=460, margin={"t": 30})
    return fig


def metrics_figure(tidy: pd.DataFrame) -> go.Figure:
    """Every per-head metric (one panel each) and the monitor batch's loss against the step:
    a line per head, coloured by layer."""
    panels = [m for m in HEAD_METRICS if (tidy["metric"] == m).any()]
    has_loss = (tidy["metric"] == "loss").any()
    titles = [*panels, *(["loss (monitor batch, nats)"] if has_loss else [])]
    ncols = 2
    nrows = max(1, -(-len(titles) // ncols))
    fig = make_subplots(rows=nrows, cols=ncols, subplot_titles=titles, vertical_spacing=0.07)
    shown: set[int] = set()
    for k, metric in enumerate(panels):
        d = tidy[tidy["metric"] == metric]
        for (layer, head), g in d.groupby(["layer", "head"]):
            fig.add_trace(go.Scatter(
                x=g["step"], y=g["value"], mode="lines", name=f"layer {layer}",
                legendgroup=f"L{layer}", showlegend=int(layer) not in shown,
                line={"color": COLORS[int(layer) % len(COLORS)], "width": 1.2},
                hovertemplate=f"L{layer} H{head} step %{{x}}: %{{y:.4g}}<extra>{metric}"
                              "</extra>"), row=k // ncols + 1, col=k % ncols + 1)
            shown.add(int(layer))
    if has_loss:
        k = len(panels)
        d = tidy[tidy["metric"] == "loss"]
        fig.add_trace(go.Scatter(x=d["step"], y=d["value"], mode="lines", name="loss",
                                 line={"color": "#444444"}), row=k // ncols + 1,
                      col=k % ncols + 1)
    fig.update_layout(height=260 * nrows, margin={"t": 40})
    return fig
