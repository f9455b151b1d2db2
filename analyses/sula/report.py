"""Tables, figures and the terminal view of a SULA run (:mod:`analyses.sula.run`)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pandas as pd
import plotly.graph_objects as go
from plotly.subplots import make_subplots

from ...infotheory import calibration
from ..kit.html import html_report
from ..kit.numbers import num
from .result import SulaResult


def per_k_table(table: pd.DataFrame) -> pd.DataFrame:
    """Per condition and k: n, mean H_Bayes / H_model (bits), MAE, corr, label mass, PC1
    mean and std (the tidy per-k view of the per-prompt ``table``)."""
    rows = []
    for (c, k), g in table.groupby(["condition", "k"], sort=False):
        hm, hb = g["h_model_bits"].to_numpy(), g["h_bayes_bits"].to_numpy()
        cal = calibration(hm, hb)
        rows.append({"condition": c, "k": int(k), "n": len(g), "h_bayes_bits": hb.mean(),
                     "h_model_bits": hm.mean(), "h_model_std": hm.std(ddof=1) if len(g) > 1
                     else float("nan"), "mae": cal.mae, "corr": cal.corr,
                     "label_mass": g["label_mass"].mean(),
                     "pc1_mean": g["pc1"].mean() if "pc1" in g else float("nan"),
                     "pc1_std": g["pc1"].std(ddof=1) if "pc1" in g and len(g) > 1
                     else float("nan")})
    return pd.DataFrame(rows)


def calibration_figure(per_k: pd.DataFrame) -> go.Figure:
    """Mean H_model per k for each condition beside H_Bayes (bits)."""
    fig = make_subplots(rows=1, cols=len(per_k["condition"].unique()), shared_yaxes=True,
                        subplot_titles=list(per_k["condition"].unique()))
    for i, (_, g) in enumerate(per_k.groupby("condition", sort=False), start=1):
        fig.add_trace(go.Scatter(x=g["k"], y=g["h_bayes_bits"], name="H_Bayes",
                                 mode="lines+markers", line={"dash": "dash", "color": "black"},
                                 showlegend=i == 1), row=1, col=i)
        fig.add_trace(go.Scatter(x=g["k"], y=g["h_model_bits"], name="H_model",
                                 mode="lines+markers", line={"color": "#1f77b4"},
                                 error_y={"type": "data", "array": g["h_model_std"]},
                                 showlegend=i == 1), row=1, col=i)
    fig.update_yaxes(title_text="entropy (bits)", row=1, col=1)
    fig.update_xaxes(title_text="k examples")
    fig.update_layout(height=360, margin={"t": 40})
    return fig


def pc1_figure(per_k: pd.DataFrame) -> go.Figure:
    """Shared-basis PC1 (mean ± std over prompts) per k, one line per condition."""
    fig = go.Figure()
    for c, g in per_k.groupby("condition", sort=False):
        fig.add_trace(go.Scatter(x=g["k"], y=g["pc1_mean"], name=str(c), mode="lines+markers",
                                 error_y={"type": "data", "array": g["pc1_std"]}))
    fig.update_layout(xaxis_title="k examples", yaxis_title="PC1 (standardised values)",
                      height=360, margin={"t": 30})
    return fig


def format_summary(s: SulaResult) -> str:
    """A compact terminal table: per condition MAE, corr and mean H_model per k."""
    ks = [str(k) for k in s.ks]
    ref = ", ".join(f"{k} {v:.2f}" for k, v in s.paper3_mae_bits.items())
    lines = [f"{s.model} · SULA · labels {'/'.join(s.labels)} (remap "
             f"{'/'.join(s.remap_labels)}) · {s.n_per_k} prompts per k",
             f"Paper III main-condition MAE: {ref} bits",
             f"{'condition':<9} {'MAE':>6} {'corr':>6} {'mass':>5} {'|ρ PC1,H_B|':>11}  "
             + " ".join(f"{'H k=' + k:>7}" for k in ks)]
    exp = s.expected_h_bayes_bits
    lines.append(f"{'Bayes':<9} {'':>6} {'':>6} {'':>5} {'':>11}  "
                 + " ".join(f"{exp[k]:>7.3f}" for k in ks))
    for c, r in s.conditions.items():
        hk = " ".join(f"{_n(r.per_k[k].h_model if k in r.per_k else None):>7}" for k in ks)
        lines.append(f"{c:<9} {_n(r.mae):>6} {_n(r.corr):>6} {_n(r.label_mass, 2):>5} "
                     f"{_n(r.abs_rho_pc1_h_bayes):>11}  {hk}")
    return "\n".join(lines)


def _n(x: float | None, nd: int = 3) -> str:
    return num(x, nd)


def write_report(path: Path, s: SulaResult, per_k: pd.DataFrame,
                 manifest: dict[str, Any]) -> Path:
    return html_report(path, f"SULA calibration — {s.model}", [
        ("Summary", format_summary(s)),
        ("Entropy per k", calibration_figure(per_k)),
        ("Per k", per_k),
        ("Last-layer PC1 per k (shared basis)", pc1_figure(per_k)),
    ], manifest)
