"""Figures, table and terminal view of ``bayesgeom stability`` (:mod:`analyses.stability.run`)."""

from __future__ import annotations

import math
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd
import plotly.graph_objects as go
from plotly.subplots import make_subplots

from ...probes.decay_fit import decay_curve
from ..kit.html import COLORS, html_report
from .result import StabilityResult

#: table metric -> panel title
PANELS = {"accuracy": "accuracy", "kl_bits": "KL(p_Bayes ‖ p_model), bits",
          "entropy_mae_bits": "entropy MAE, bits",
          "attention_entropy_norm": "query attention entropy / log2 ℓ",
          "key_orthogonality": "key-frame orthogonality, 1 − mean |cos|"}


def _line(x: Any, y: Any, name: str, color: str, dash: str | None = None,
          show: bool = True) -> go.Scatter:
    return go.Scatter(x=x, y=y, name=name, mode="lines" if dash else "lines+markers",
                      line={"color": color, "dash": dash}, legendgroup=name, showlegend=show)


def curves_figure(res: StabilityResult, table: pd.DataFrame) -> go.Figure:
    """One panel per metric against length (log x): the model (per layer for attention and
    keys), its controls dashed, and on accuracy the fitted decay curve and ℓ_c."""
    panels = [k for k in PANELS if k in set(table["metric"])]
    cols = min(3, len(panels))
    rows = math.ceil(len(panels) / cols)
    fig = make_subplots(rows=rows, cols=cols, subplot_titles=[PANELS[k] for k in panels])
    seen: set[str] = set()

    def put(tr: go.Scatter, i: int) -> None:
        tr.showlegend = tr.name not in seen
        seen.add(str(tr.name))
        fig.add_trace(tr, row=i // cols + 1, col=i % cols + 1)

    for i, metric in enumerate(panels):
        g = table[table["metric"] == metric]
        for j, (layer, gl) in enumerate(g.groupby("layer", sort=True)):
            name = "model" if layer < 0 else f"layer {layer}"
            put(_line(gl["length"], gl["value"], name, COLORS[j % len(COLORS)]), i)
            if gl["random_init"].notna().any():
                put(_line(gl["length"], gl["random_init"], f"random init, {name}",
                          COLORS[j % len(COLORS)], dash="dot"), i)
        ref = g.groupby("length", sort=True)[["bayes", "chance"]].mean()
        for col, dash in (("bayes", "dash"), ("chance", "dashdot")):
            if ref[col].notna().any():
                put(_line(ref.index, ref[col], f"{col} (control)", "#777", dash=dash), i)
        if metric == "accuracy" and res.critical_length is not None:
            _add_fit(res, i, put, fig, cols)
    fig.update_xaxes(type="log", title_text="length (tokens)")
    fig.update_layout(height=380 * rows, width=1150, margin={"t": 50})
    return fig


def _add_fit(res: StabilityResult, i: int, put: Any, fig: go.Figure, cols: int) -> None:
    c = res.critical_length
    assert c is not None
    if not math.isfinite(c.critical_length):
        return
    x = np.geomspace(min(res.lengths), max(res.lengths), 200)
    put(_line(x, decay_curve(x, c.a, c.critical_length, c.b, c.floor), "fitted decay",
              "#000", dash="solid"), i)
    if c.estimate is not None:
        lo = c.low if c.low is not None else c.estimate
        hi = c.high if c.high is not None else max(res.lengths)
        fig.add_vrect(x0=lo, x1=hi, fillcolor="#999", opacity=0.2, line_width=0,
                      row=i // cols + 1, col=i % cols + 1)
        fig.add_vline(x=c.estimate, line_dash="dash", line_color="#000",
                      row=i // cols + 1, col=i % cols + 1)


def wide_table(res: StabilityResult) -> pd.DataFrame:
    """The headline numbers per length, each beside its control."""
    return pd.DataFrame([{
        "length": s.length, "× L": s.multiple, "accuracy": s.accuracy,
        "Bayes acc.": s.bayes_accuracy, "chance": s.chance, "KL bits": s.kl_bits,
        "entropy MAE bits": s.entropy_mae_bits, "attn H / log2 ℓ": s.attention_entropy_norm,
        "attn (random init)": s.attention_entropy_norm_random_init,
        "key orth.": s.key_orthogonality, "key orth. (random init)":
            s.key_orthogonality_random_init, "key orth. chance": s.key_orthogonality_chance,
        "note": s.note} for s in res.per_length])


def format_summary(res: StabilityResult) -> str:
    at = "base length" if res.task == "passkey" else "trained at"
    lines = [f"{res.model} ({res.arch}), {res.task} {at} L = {res.train_length}; "
             f"{res.n_eval} held-out sequences per length; attention and keys up to "
             f"{res.max_attention_length} tokens"]
    c = res.critical_length
    if c is not None:
        lines.append(f"accuracy: {c.text}; fit a = {c.a:.3f}, b = {c.b:.2f}, floor (chance) "
                     f"= {c.floor:.4f}, {c.n_boot} bootstrap replicates "
                     f"({c.n_not_crossed} without a crossing, {c.n_failed} left out)")
    elif "accuracy" in res.metrics:
        lines.append("accuracy: no decay fit (it needs three or more lengths)")
    lines.append(f"{'length':>7} {'acc':>6} {'bayes':>6} {'chance':>6} {'KL':>7} {'MAE':>6} "
                 f"{'attnH/':>7} {'(rand)':>7} {'keyort':>7} {'(rand)':>7} {'(chnc)':>7}")
    for s in res.per_length:
        lines.append(f"{s.length:>7} {s.accuracy:>6.3f} {s.bayes_accuracy:>6.3f} "
                     f"{s.chance:>6.3f} {s.kl_bits:>7.3f} {s.entropy_mae_bits:>6.3f} "
                     f"{s.attention_entropy_norm:>7.3f} "
                     f"{s.attention_entropy_norm_random_init:>7.3f} "
                     f"{s.key_orthogonality:>7.3f} {s.key_orthogonality_random_init:>7.3f} "
                     f"{s.key_orthogonality_chance:>7.3f}")
    notes = sorted({s.note for s in res.per_length if s.note})
    return "\n".join(lines + [f"note: {n}" for n in notes])


def write_report(path: Path, res: StabilityResult, table: pd.DataFrame,
                 manifest: dict[str, Any]) -> Path:
    return html_report(path, "Long-sequence stability", [
        ("Summary", format_summary(res)),
        ("Metrics against length, with their controls; accuracy with the fitted decay curve "
         "and the critical length (dashed line, shaded interval)", curves_figure(res, table)),
        ("Per length", wide_table(res)),
        ("Every row", table),
    ], manifest)
