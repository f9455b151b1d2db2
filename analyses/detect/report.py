"""Figures, table and terminal view of ``bayesgeom detect`` (:mod:`analyses.detect.run`)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pandas as pd
import plotly.graph_objects as go
from plotly.subplots import make_subplots

from ...probes.key_frame import welch_bound
from ..kit.html import html_report
from .result import CONDITIONS, DetectResult


def heatmap_figure(table: pd.DataFrame) -> go.Figure:
    """Orthogonality (1 − mean |cos|) and isotropy per layer × head, trained beside random
    init."""
    fig = make_subplots(rows=2, cols=2, subplot_titles=[
        f"{what}: {c}" for what in ("orthogonality 1 − mean |cos|", "isotropy (PR, centred)")
        for c in CONDITIONS], vertical_spacing=0.15)
    for r, metric in enumerate(("orthogonality", "isotropy"), start=1):
        for col, c in enumerate(CONDITIONS, start=1):
            w = table[table["condition"] == c].pivot(index="layer", columns="head",
                                                     values=metric)
            fig.add_trace(go.Heatmap(z=w.to_numpy(), x=[f"h{h}" for h in w.columns],
                                     y=[f"L{L}" for L in w.index], zmin=0, zmax=1,
                                     colorscale="Viridis", showscale=col == 2 and r == 1),
                          row=r, col=col)
    fig.update_layout(height=700, width=1000, margin={"t": 50})
    return fig


def frame_note(res: DetectResult) -> str:
    """Whether the frame can be orthogonal at all, and the best score a frame of its shape
    reaches (the Welch ceiling) when it cannot."""
    m, d = res.n_frame_tokens, res.d_head
    if res.orthogonalisable:
        return f"m = {m} keys in d = {d} dims: an orthogonal frame is possible (ceiling 1)"
    w = welch_bound(m, d)
    return (f"m = {m} keys > d = {d} dims: NOT orthogonalisable -- m vectors in R^d cannot be "
            f"mutually orthogonal; the Welch bound √((m−d)/(d(m−1))) = {w:.3f} caps the most "
            f"uniform frame at {1 - w:.3f}, and 'vs ceiling' = score ÷ {1 - w:.3f}")


def format_summary(res: DetectResult) -> str:
    """Per layer: the orthogonality score trained / random init / random vectors (and ÷ the
    ceiling where m > d), then isotropy and utilisation, each labelled by its definition."""
    means = res.layer_means()
    lines = [f"{res.model} · frame: {res.n_frame_tokens} {res.frame} · {res.n_kv_heads} kv "
             f"heads of {res.d_head} dims · random-init twin seed {res.twin_seed}",
             "orthogonality = 1 − mean |cos| of the unit keys (Paper I; 1 = pairwise "
             "orthogonal); random = Gaussian vectors of the frame's shape",
             frame_note(res),
             f"{'layer':<6} {'orth trained':>12} {'random init':>12} {'random vec':>11} "
             f"{'vs ceiling':>11} {'isotropy':>9} {'(twin)':>7} {'util':>6}"]
    for L in res.layers:
        t = means[(means["condition"] == "trained") & (means["layer"] == L)].iloc[0]
        r = means[(means["condition"] == "random_init") & (means["layer"] == L)].iloc[0]
        lines.append(f"{L:<6} {t['orthogonality']:>12.3f} {r['orthogonality']:>12.3f} "
                     f"{t['chance']:>11.3f} {t['vs_ceiling']:>11.3f} {t['isotropy']:>9.3f} "
                     f"{r['isotropy']:>7.3f} {t['utilisation']:>6.3f}")
    lines.append("isotropy = (PR − 1)/(n − 1) of the centred unit keys' singular values (how "
                 "evenly the frame fills its dimensions; not orthogonality); util = effective "
                 "rank / d")
    return "\n".join(lines)


def write_report(path: Path, res: DetectResult, table: pd.DataFrame,
                 manifest: dict[str, Any]) -> Path:
    return html_report(path, f"Key-frame detector — {res.model}", [
        ("Summary", format_summary(res)),
        ("Per layer and head, beside the random-init twin", heatmap_figure(table)),
        ("Per layer (means over heads)", res.layer_means()),
        ("Every head", table),
    ], manifest)
