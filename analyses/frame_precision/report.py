"""Figure, table and terminal view of a frame–precision run (:mod:`analyses.frame_precision.run`).

The figure puts every headline metric on one scale: (value − final value) / range, where the
range is max − min over all steps (step 0 included), so each curve ends at 0 and the plateau
band is ±tolerance, the same for all; frame metrics on the top panel, precision metrics on the
bottom one, against the training step on a log axis (step 0, the initialisation, is drawn at
half the first checkpoint's step and labelled "init"), each metric's plateau step marked.

The result type (:class:`FramePrecisionResult`, whose serialisation is ``summary.json``) and the
metric names are in :mod:`analyses.frame_precision.result`.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd
import plotly.graph_objects as go
from plotly.subplots import make_subplots

from ..kit.html import html_report
from ..kit.numbers import num
from .result import PER_LAYER, PRECISION_METRICS, FramePrecisionResult

#: headline precision metrics drawn (the MAE on its log scale)
PRECISION_DRAWN = ("log10_entropy_mae_bits", "vm_pc1", "vm_linear_r2", "vm_abs_corr_pc1")
COLOURS = ("#1f77b4", "#d62728", "#2ca02c", "#9467bd", "#ff7f0e")


def headline_table(table: pd.DataFrame, s: FramePrecisionResult) -> pd.DataFrame:
    """One row per step (step, source, then the whole-model value of each headline metric and
    the Gaussian-key control), and a last row ``plateau step`` holding each metric's."""
    cols = [*s.frame_metrics, "key_abs_cos_gaussian", *PRECISION_METRICS]
    whole = table[table["metric"].isin(cols)
                  & (table["layer"].isna() | ~table["metric"].isin(PER_LAYER))]
    wide = whole.pivot(index=["step", "source"], columns="metric", values="value").reset_index()
    wide = wide[[c for c in ["step", "source", *cols] if c in wide.columns]]
    wide.columns.name = None
    plateau = {"step": np.nan, "source": "plateau step",
               **{c: s.plateau_steps.get(c) for c in cols if c in wide.columns}}
    out = pd.concat([wide.astype({"step": float}), pd.DataFrame([plateau])], ignore_index=True)
    return out.astype({"step": "Int64"})


def _x(steps: np.ndarray) -> np.ndarray:
    pos = steps[steps > 0]
    x0 = pos.min() / 2 if pos.size else 0.5
    return np.where(steps > 0, steps, x0).astype(float)


def figure(table: pd.DataFrame, s: FramePrecisionResult) -> go.Figure:
    """The two-panel normalised figure (module doc)."""
    wide = headline_table(table, s).iloc[:-1]
    steps = wide["step"].to_numpy(dtype=float)
    x = _x(steps)
    fig = make_subplots(rows=2, cols=1, shared_xaxes=True, vertical_spacing=0.08,
                        subplot_titles=("frame", "precision"))
    for row, metrics in ((1, s.frame_metrics), (2, PRECISION_DRAWN)):
        for i, k in enumerate(metrics):
            v = wide[k].to_numpy(dtype=float)
            ok = np.isfinite(v)
            if not ok.any():
                continue
            span = np.ptp(v[ok]) or 1.0
            y = (v - v[ok][-1]) / span
            colour = COLOURS[i % len(COLOURS)]
            fig.add_trace(go.Scatter(
                x=x, y=y, name=k, mode="lines+markers", line={"color": colour},
                legendgroup=str(row), customdata=np.stack([steps, v], -1),
                hovertemplate="step %{customdata[0]}<br>" + k + " = %{customdata[1]:.4g}"),
                row=row, col=1)
            p = s.plateau_steps.get(k)
            if p is not None:
                j = int(np.flatnonzero(steps == p)[0])
                fig.add_trace(go.Scatter(
                    x=[x[j]], y=[y[j]], mode="markers", showlegend=False,
                    marker={"symbol": "star", "size": 14, "color": colour},
                    hovertemplate=f"{k} plateaus at step {p}<extra></extra>"), row=row, col=1)
        fig.add_hrect(y0=-s.tolerance, y1=s.tolerance, fillcolor="grey", opacity=0.15,
                      line_width=0, row=row, col=1)
    for row, step, label in ((1, s.frame_plateau_step, "frame"),
                             (2, s.precision_plateau_step, "precision (log10 MAE)")):
        if step is not None:
            fig.add_vline(x=float(_x(np.array([step, *steps]))[0]), line_dash="dash",
                          row=row, col=1, annotation_text=f"{label} plateau: step {step}")
    ticks = [t for t in (100, 300, 1000, 3000, 10_000, 30_000) if t <= steps.max()]
    fig.update_xaxes(type="log", tickvals=[x[0], *ticks],
                     ticktext=["init", *[f"{t:,}" for t in ticks]])
    fig.update_xaxes(title_text="training step (log)", row=2, col=1)
    fig.update_yaxes(title_text="(value − final) / range")
    fig.update_layout(height=640, margin={"t": 40})
    return fig


def _n(x: float | None, nd: int = 4) -> str:
    return num(x, nd, "g")


def format_summary(s: FramePrecisionResult) -> str:
    """A compact terminal view: per headline metric step-0 and final values and plateau step;
    then the claim."""
    lines = [f"frame–precision · {s.arch} on {s.task} · {s.run_dir} · {len(s.steps)} points, "
             f"steps 0..{s.final_step} · plateau: within {s.tolerance:g} x range of the final",
             f"{'metric':<26} {'group':<9} {'step 0':>9} {'final':>9} {'plateau':>8}"]
    for group, metrics in (("frame", s.frame_metrics), ("precision", PRECISION_METRICS)):
        for k in metrics:
            p = s.plateau_steps.get(k)
            lines.append(f"{k:<26} {group:<9} {_n(s.init_values.get(k)):>9} "
                         f"{_n(s.final_values.get(k)):>9} {'n/a' if p is None else p:>8}")
    lines.append("(key_abs_cos: Paper I's layer-0 token-key mean |cos| on E_tok[0..V−1], the "
                 f"bijection's key tokens; of Gaussian keys: {_n(s.key_abs_cos_gaussian)}; MAE: "
                 "per-sample, bits)")
    lines.append(f"frame plateaus at step {s.frame_plateau_step} (latest of "
                 f"{', '.join(s.frame_metrics)}); precision (log10 MAE) at step "
                 f"{s.precision_plateau_step} -> frame before precision: "
                 f"{s.frame_before_precision}")
    return "\n".join(lines)


def write_report(path: Path, s: FramePrecisionResult, table: pd.DataFrame,
                 manifest: dict[str, Any]) -> Path:
    return html_report(path, f"Frame–precision dissociation — {s.run_dir}", [
        ("Summary", format_summary(s)),
        ("Definitions", f"Plateau step: {s.plateau_definition}. MAE: {s.mae_definition}. "
                        f"Attention mass: {s.attn_mass_metric} "
                        "(see analyses.frame_precision.run)."),
        ("Frame and precision against training step", figure(table, s)),
        ("Per step (whole-model values) and plateau steps", headline_table(table, s)),
    ], manifest)
