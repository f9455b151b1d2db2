"""Plotly figures of a geometry run: the value-PCA scatter and the per-layer curves."""

from __future__ import annotations

import pandas as pd
import plotly.graph_objects as go
from plotly.subplots import make_subplots

_COLORS = ("#1f77b4", "#d62728", "#2ca02c", "#9467bd", "#ff7f0e", "#8c564b", "#17becf")


def pca_scatter(prompts: pd.DataFrame, prompt_set: str, layer: int) -> go.Figure:
    """PC1 vs PC2 of the final-token values at ``layer``, one marker per prompt, coloured by
    next-token entropy (bits). ``prompts`` needs ``pc1``, ``pc2``, ``entropy_bits``, ``text``."""
    hover = [t if len(t) <= 90 else t[:87] + "..." for t in prompts["text"].astype(str)]
    fig = go.Figure(go.Scatter(
        x=prompts["pc1"], y=prompts["pc2"], mode="markers", text=hover,
        marker={"color": prompts["entropy_bits"], "colorscale": "Viridis", "size": 8,
                "colorbar": {"title": "entropy (bits)"}},
        hovertemplate="%{text}<br>H = %{marker.color:.2f} bits<extra></extra>",
    ))
    fig.update_layout(title=f"{prompt_set}: values at layer {layer}, standardised PCA",
                      xaxis_title="PC1", yaxis_title="PC2", template="plotly_white",
                      height=450)
    return fig


def layer_curves(table: pd.DataFrame, key: dict) -> go.Figure:
    """Per-layer panels from the tidy ``table``: PC1 share, |ρ(PC1, entropy)|, probe R²,
    attention entropy (with CIs where the table has them) and key orthogonality with baselines."""
    fig = make_subplots(rows=3, cols=2, subplot_titles=(
        "value PC1 share of variance", "|Spearman ρ(PC1, entropy)|", "entropy-probe R² (CV)",
        "attention entropy at the final token (bits)", "key orthogonality: mean |cos|", ""))
    panels = {("pc1", None): (1, 1), ("abs_spearman_pc1", "entropy"): (1, 2),
              ("probe_r2", "entropy"): (2, 1), ("attention_entropy_bits", None): (2, 2)}
    sets = [s for s in table["prompt_set"].dropna().unique()]
    for (metric, target), (r, c) in panels.items():
        for i, s in enumerate(sets):
            rows = table[(table["prompt_set"] == s) & (table["metric"] == metric)]
            if target is not None:
                rows = rows[rows["target"] == target]
            if rows.empty:
                continue
            color = _COLORS[i % len(_COLORS)]
            fig.add_scatter(x=rows["layer"], y=rows["value"], mode="lines+markers", name=s,
                            legendgroup=s, showlegend=(r, c) == (1, 1),
                            line={"color": color}, row=r, col=c)
            if rows["low"].notna().any():
                fig.add_scatter(x=list(rows["layer"]) + list(rows["layer"])[::-1],
                                y=list(rows["high"]) + list(rows["low"])[::-1], fill="toself",
                                line={"width": 0}, fillcolor=color, opacity=0.15,
                                hoverinfo="skip", showlegend=False, legendgroup=s, row=r, col=c)
    ko = pd.DataFrame(key["per_layer"])
    fig.add_scatter(x=ko["layer"], y=ko["mean_abs_cos"], mode="lines+markers",
                    name="W_K mean |cos|", line={"color": "black"}, row=3, col=1)
    fig.add_scatter(x=list(ko["layer"]) + list(ko["layer"])[::-1],
                    y=list(ko["p95"]) + list(ko["p5"])[::-1], fill="toself", line={"width": 0},
                    fillcolor="black", opacity=0.12, name="heads p5–p95", row=3, col=1)
    for y, name, dash in ((key["gaussian_baseline"], "Gaussian √(2/(π·d_model))", "dash"),
                          (key["random_init_baseline"]["mean_abs_cos"], "random init", "dot"),
                          (0.20, "criterion 0.20", "dashdot")):
        fig.add_scatter(x=[ko["layer"].min(), ko["layer"].max()], y=[y, y], mode="lines",
                        name=name, line={"dash": dash, "color": "gray"}, row=3, col=1)
    fig.update_xaxes(title_text="layer")
    fig.update_layout(template="plotly_white", height=900)
    return fig
