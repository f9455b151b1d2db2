"""Figures, table and terminal view of ``bayesgeom detect`` (:mod:`analyses.detect.run`)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pandas as pd
import plotly.graph_objects as go
from plotly.subplots import make_subplots

from ..kit.html import html_report
from .result import CONDITIONS, DetectResult


def heatmap_figure(table: pd.DataFrame) -> go.Figure:
    """Orthogonality and utilisation per layer × head, trained beside random init."""
    fig = make_subplots(rows=2, cols=2, subplot_titles=[
        f"{what}: {c}" for what in ("orthogonality score", "utilisation (erank / d)")
        for c in CONDITIONS], vertical_spacing=0.15)
    for r, metric in enumerate(("orthogonality", "utilisation"), start=1):
        for col, c in enumerate(CONDITIONS, start=1):
            w = table[table["condition"] == c].pivot(index="layer", columns="head",
                                                     values=metric)
            fig.add_trace(go.Heatmap(z=w.to_numpy(), x=[f"h{h}" for h in w.columns],
                                     y=[f"L{L}" for L in w.index], zmin=0, zmax=1,
                                     colorscale="Viridis", showscale=col == 2 and r == 1),
                          row=r, col=col)
    fig.update_layout(height=700, width=1000, margin={"t": 50})
    return fig


def format_summary(res: DetectResult) -> str:
    """Per layer: mean orthogonality trained / random init (chance) and utilisation."""
    means = res.layer_means()
    lines = [f"{res.model} · frame: {res.n_frame_tokens} {res.frame} · {res.n_kv_heads} kv "
             f"heads of {res.d_head} dims",
             "orthogonality 1 = orthogonal frame, 0 = rank 1; utilisation = effective rank / d",
             f"{'layer':<6} {'orth trained':>12} {'random init':>12} {'chance':>7} "
             f"{'util trained':>13} {'random init':>12}"]
    for L in res.layers:
        t = means[(means["condition"] == "trained") & (means["layer"] == L)].iloc[0]
        r = means[(means["condition"] == "random_init") & (means["layer"] == L)].iloc[0]
        lines.append(f"{L:<6} {t['orthogonality']:>12.3f} {r['orthogonality']:>12.3f} "
                     f"{t['chance']:>7.3f} {t['utilisation']:>13.3f} {r['utilisation']:>12.3f}")
    return "\n".join(lines)


def write_report(path: Path, res: DetectResult, table: pd.DataFrame,
                 manifest: dict[str, Any]) -> Path:
    return html_report(path, f"Key-frame detector — {res.model}", [
        ("Summary", format_summary(res)),
        ("Per layer and head, beside the random-init twin", heatmap_figure(table)),
        ("Per layer (means over heads)", res.layer_means()),
        ("Every head", table),
    ], manifest)
