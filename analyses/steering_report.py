"""Figures, tables, the terminal view and the HTML report of a steering experiment
(:mod:`analyses.steering`)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd
import plotly.graph_objects as go
from plotly.subplots import make_subplots

from analyses.report import html_report
from analyses.results import SteerResult
from analyses.steering_scores import RELATIVE_METRICS

#: (kind, metric, y label) panels of the dose–response figure
PANELS = (
    ("cut", "mae", "Δ calibration MAE (bits)"),
    ("cut", "kl_clean", "KL(clean ‖ edited) (bits)"),
    ("shift", "h_model", "Δ mean H_model (bits)"),
    ("shift", "kl_bayes", "Δ KL(Bayes ‖ model) (bits)"),
)


def _change(table: pd.DataFrame, metric: str) -> pd.DataFrame:
    """Overall rows of ``metric`` with ``change`` = value minus the clean value (or the value
    itself for metrics already relative to the clean pass)."""
    t = table[(table["metric"] == metric) & table["group"].isna()].copy()
    clean = t[t["condition"] == "clean"]["value"]
    ref = float(clean.iloc[0]) if metric not in RELATIVE_METRICS and len(clean) else 0.0
    t["change"] = t["value"] - ref
    return t[t["condition"] != "clean"]


def dose_response(table: pd.DataFrame) -> go.Figure:
    """Axis effect (total and direct) against the random-direction null's 5–95 % band, for the
    cut-fraction and shift-δ sweeps."""
    fig = make_subplots(rows=2, cols=2, subplot_titles=[p[2] for p in PANELS])
    for i, (kind, metric, _label) in enumerate(PANELS):
        r, c = divmod(i, 2)
        t = _change(table, metric)
        t = t[t["kind"] == kind]
        if t.empty:
            continue
        for eff, dash in (("total", None), ("direct", "dot")):
            e = t[t["effect"] == eff]
            if e.empty:
                continue
            null = e[e["direction"] != "axis"].groupby("param")["change"]
            lo, hi = null.quantile(0.05), null.quantile(0.95)
            xs = lo.index.to_numpy()
            fig.add_scatter(x=np.r_[xs, xs[::-1]], y=np.r_[hi.to_numpy(), lo.to_numpy()[::-1]],
                            fill="toself", line={"width": 0}, opacity=0.25,
                            name=f"random 5–95 % ({eff})", legendgroup=f"null-{eff}",
                            showlegend=i == 0, row=r + 1, col=c + 1)
            a = e[e["direction"] == "axis"].sort_values("param")
            fig.add_scatter(x=a["param"], y=a["change"], mode="lines+markers",
                            line={"dash": dash}, name=f"entropy axis ({eff})",
                            legendgroup=f"axis-{eff}", showlegend=i == 0, row=r + 1, col=c + 1)
        fig.update_xaxes(title_text="fraction removed" if kind == "cut" else "shift δ (σ)",
                         row=r + 1, col=c + 1)
    fig.update_layout(template="plotly_white", height=700)
    return fig


def per_group(table: pd.DataFrame, result: SteerResult) -> go.Figure:
    """Mean model entropy per group (SULA: k) on the clean pass and under the headline axis
    edits (total effect), with the exact Bayes entropy."""
    g = result.group_name
    fig = go.Figure()
    clean = result.clean.per_group
    ks = sorted(int(k) for k in clean)
    fig.add_scatter(x=ks, y=[clean[str(k)].h_bayes for k in ks], name="exact Bayes",
                    mode="lines+markers", line={"color": "black"})
    fig.add_scatter(x=ks, y=[clean[str(k)].h_model for k in ks], name="model (clean)",
                    mode="lines+markers")
    metric = f"h_model_by_{g}"
    for cond in ("cut+1", "keep_only", "shift-1", "shift+1"):
        t = table[(table["condition"] == cond) & (table["direction"] == "axis")
                  & (table["effect"] == "total") & (table["metric"] == metric)]
        if not t.empty:
            t = t.sort_values("group")
            fig.add_scatter(x=t["group"].astype(int), y=t["value"], name=f"axis {cond}",
                            mode="lines+markers", line={"dash": "dash"})
    fig.update_layout(template="plotly_white", xaxis_title=g,
                      yaxis_title="mean entropy over the hypotheses (bits)")
    return fig


def effects_view(effects: pd.DataFrame) -> pd.DataFrame:
    keep = ["d_mae", "d_corr", "d_kl_bayes", "d_h_model", "kl_clean", "top1_flip",
            "d_axis_corr"]
    e = effects[effects["metric"].isin(keep)]
    return e[["condition", "effect", "metric", "axis", "null_mean", "null_std", "p", "z"]]


def write_report(path: Path, result: SteerResult, table: pd.DataFrame,
                 effects: pd.DataFrame, manifest: dict[str, Any]) -> Path:
    c = result.clean
    intro = (f"{result.model} on {result.task} ({result.n_prompts} prompts); edits at "
             f"{', '.join(result.sites)} ({result.positions} positions) against "
             f"{result.n_random} random directions per layer (norm-matched, orthogonal to "
             f"the axis). Clean: calibration MAE {c.mae:.3f} bits, corr(H_model, H_Bayes) "
             f"{_f(c.corr, 3)}, KL(Bayes ‖ model) {c.kl_bayes:.3f} bits. p-values: "
             "(1 + #{|random| ≥ |axis|}) / (n + 1). 'direct' freezes the final norm's scale at "
             "its clean value.")
    return html_report(path, f"bayesgeom steer: {result.model}", [
        ("Set-up", intro),
        ("Dose–response against random directions", dose_response(table)),
        (f"Entropy per {result.group_name}", per_group(table, result)),
        ("Effects and p-values", effects_view(effects)),
    ], manifest)


def format_summary(s: SteerResult) -> str:
    """A compact terminal table: per condition, the total (and direct) effect on calibration
    MAE, KL to the clean distribution and top-1 flips, each with its p against the null."""
    c = s.clean
    head = (f"{s.model} · {s.task} · {s.n_prompts} prompts · sites "
            f"{', '.join(s.sites)} · {s.n_random} random directions\n"
            f"clean: MAE {_f(c.mae)} bits, corr(H_model, H_Bayes) {_f(c.corr)}, "
            f"KL(Bayes‖model) {_f(c.kl_bayes)} bits, axis corr "
            + ", ".join(f"L{k} {_f(v)}" for k, v in c.axis_corr.items()))
    lines = [head, f"{'condition':<12} {'effect':<7} {'ΔMAE bits (p)':>18} "
             f"{'ΔKL→Bayes (p)':>18} {'KL→clean (p)':>18} {'flips':>6} {'Δaxis corr':>11}"]
    for cond, effs in s.headline.items():
        for eff, mets in effs.items():
            def cell(k: str, mets: dict = mets) -> str:
                r = mets.get(k)
                return f"{_f(r.axis if r else None)} ({_f(r.p if r else None, 2)})"
            flips = mets["top1_flip"].axis if "top1_flip" in mets else None
            dax = mets["d_axis_corr"].axis if "d_axis_corr" in mets else None
            lines.append(f"{cond:<12} {eff:<7} {cell('d_mae'):>18} {cell('d_kl_bayes'):>18} "
                         f"{cell('kl_clean'):>18} {_f(flips, 2):>6} {_f(dax, 2):>11}")
    return "\n".join(lines)


def _f(x: float | None, nd: int = 3) -> str:
    if x is None or (isinstance(x, float) and not np.isfinite(x)):
        return "n/a"
    if nd == 3 and 0 < abs(x) < 5e-4:
        return f"{x:+.1e}"  # effects below the printed precision stay visible
    return f"{x:+.{nd}f}" if nd == 3 else f"{x:.{nd}f}"
