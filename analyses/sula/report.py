"""The verdict table, tables, figures and the terminal view of a SULA run
(:mod:`analyses.sula.run`).

The run records no interval or test of the main condition against its controls (lexical
remap, shuffled labels, evidence ablation) or against Paper III's numbers, so its findings
carry those numbers side by side and no verdict.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pandas as pd
import plotly.graph_objects as go
from plotly.subplots import make_subplots

from ...infotheory import calibration
from ..kit.findings import Finding, findings_text
from ..kit.html import COLORS, html_report
from ..kit.numbers import sig
from .result import SulaCondition, SulaResult

#: what to look for in :func:`calibration_figure`
CALIBRATION_CAPTION = ("Look for: the blue model line on the dashed black exact-Bayes line in "
                       "the main and remap panels, falling from 1 bit as k grows; in the "
                       "shuffled and ablated panels exact Bayes stays at 1 bit, so a model line "
                       "that still falls with k is following k, not the evidence.")
#: what to look for in :func:`pc1_figure`
PC1_CAPTION = ("Look for: PC1 moving monotonically with k for main and remap (Paper III), and "
               "flat or unordered for the shuffled and ablated controls; bars are ± one "
               "standard deviation over the prompts.")

NO_CRITERION = "no criterion: the run records no interval or test against this control"


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
        fig.add_trace(go.Scatter(x=g["k"], y=g["h_bayes_bits"], name="exact Bayes (H_Bayes)",
                                 mode="lines+markers", line={"dash": "dash", "color": "black"},
                                 showlegend=i == 1), row=1, col=i)
        fig.add_trace(go.Scatter(x=g["k"], y=g["h_model_bits"], name="model (H_model)",
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
    for i, (c, g) in enumerate(per_k.groupby("condition", sort=False)):
        fig.add_trace(go.Scatter(x=g["k"], y=g["pc1_mean"], name=str(c), mode="lines+markers",
                                 line={"color": COLORS[i % len(COLORS)]},
                                 error_y={"type": "data", "array": g["pc1_std"]}))
    fig.update_layout(xaxis_title="k examples", yaxis_title="PC1 (standardised values)",
                      height=360, margin={"t": 30})
    return fig


def _paper3_mae(s: SulaResult) -> str:
    """Paper III's main-condition MAE of this model, or the range it reported."""
    mine = [v for k, v in s.paper3_mae_bits.items() if k.lower() in s.model.lower()]
    if mine:
        return f"Paper III on this model {sig(mine[0])} bits"
    vals = sorted(s.paper3_mae_bits.values())
    return (f"Paper III on other models {sig(vals[0])}–{sig(vals[-1])} bits" if vals
            else "none recorded")


def _others(s: SulaResult, attr: str, conds: tuple[str, ...]) -> str:
    """``attr`` of each control condition that ran, e.g. "shuffled labels 0.12"."""
    names = {"main": "main", "remap": "lexical remap", "shuffled": "shuffled labels",
             "ablated": "evidence ablation"}
    got = [f"{names[c]} {sig(getattr(s.conditions[c], attr))}" for c in conds
           if c in s.conditions]
    return "; ".join(got) or "not run"


def findings(result: SulaResult) -> list[Finding]:
    """The verdict table of a SULA run (module doc): the main condition's calibration and
    geometry (Paper III §5.2), each beside Paper III's number or the control conditions'."""
    main: SulaCondition | None = result.conditions.get("main")
    if main is None:
        return []
    rows = [
        Finding("main condition calibrated to exact Bayes (Paper III §5.2: calibration MAE, "
                "mean |H_model − H_Bayes| per prompt)", main.mae, unit="bits",
                control=_paper3_mae(result) + (
                    f"; shuffled labels (H_Bayes = 1 bit) {sig(result.conditions['shuffled'].mae)}"
                    " bits" if "shuffled" in result.conditions else ""),
                evidence=f"{NO_CRITERION}; corr(H_model, H_Bayes) {sig(main.corr)}, label "
                         f"mass {sig(main.label_mass)}, {main.n} prompts",
                undefined="no prompts were scored"),
        Finding("PC1 tracks the exact entropy (Paper III §5.2: |Spearman ρ(PC1, H_Bayes)|, "
                "shared-basis PCA of last-layer values, main condition, per prompt)",
                main.abs_rho_pc1_h_bayes, control="Paper III 0.65–0.80 (no condition "
                "with a varying H_Bayes serves as its control)", evidence=NO_CRITERION,
                undefined="PC1 or H_Bayes is constant over the prompts"),
        Finding("PC1 follows the number of examples k (Paper III: ρ(k, PC1), main "
                "condition; only main and remap monotone)", main.rho_k_pc1,
                control=_others(result, "rho_k_pc1", ("shuffled", "ablated")),
                evidence=NO_CRITERION, undefined="PC1 is constant over the prompts"),
    ]
    remap = result.conditions.get("remap")
    if remap is not None:
        rows.append(Finding(
            "lexical remap keeps the calibration (Paper III control 1: another label pair, "
            "the same posterior; calibration MAE per prompt)", remap.mae, unit="bits",
            control=f"main condition {sig(main.mae)} bits", evidence=NO_CRITERION,
            undefined="no prompts were scored"))
    return rows


def format_summary(s: SulaResult) -> str:
    """The verdict table (:func:`findings`), then :func:`summary_table`."""
    return findings_text(findings(s)) + "\n" + summary_table(s)


def summary_heading(s: SulaResult) -> str:
    """What the summary covers: model, labels, prompts and Paper III's reference MAE."""
    ref = ", ".join(f"{k} {v:.2f}" for k, v in s.paper3_mae_bits.items())
    return (f"{s.model} · SULA · labels {'/'.join(s.labels)} (remap "
            f"{'/'.join(s.remap_labels)}) · {s.n_per_k} prompts per k. Paper III's "
            f"main-condition MAE per k: {ref} bits.")


def summary_frame(s: SulaResult) -> pd.DataFrame:
    """Per condition (and the exact posterior first): calibration MAE (bits), corr, label
    mass, |ρ(PC1, H_Bayes)| and the mean model entropy at each k (bits) -- the table the
    report shows."""
    ks = [str(k) for k in s.ks]
    nan = float("nan")
    rows = [{"condition": "exact Bayes", "MAE (bits)": nan, "corr": nan, "label mass": nan,
             "|ρ(PC1, H_Bayes)|": nan,
             **{f"H at k = {k} (bits)": s.expected_h_bayes_bits[k] for k in ks}}]
    for c, r in s.conditions.items():
        rows.append({"condition": c, "MAE (bits)": r.mae, "corr": r.corr,
                     "label mass": r.label_mass, "|ρ(PC1, H_Bayes)|": r.abs_rho_pc1_h_bayes,
                     **{f"H at k = {k} (bits)": (r.per_k[k].h_model if k in r.per_k else nan)
                        for k in ks}})
    return pd.DataFrame(rows)


def summary_table(s: SulaResult) -> str:
    """:func:`summary_heading` and :func:`summary_frame` as text, for a terminal."""
    with pd.option_context("display.float_format", lambda x: f"{x:.3f}", "display.width", 160):
        body = summary_frame(s).to_string(index=False, na_rep="")
    return summary_heading(s) + "\n" + body


def write_report(path: Path, s: SulaResult, per_k: pd.DataFrame,
                 manifest: dict[str, Any]) -> Path:
    return html_report(path, f"SULA calibration — {s.model}", findings(s), [
        ("Summary", summary_heading(s)),
        ("Per condition", summary_frame(s)),
        ("Entropy per k", calibration_figure(per_k), CALIBRATION_CAPTION),
        ("Per k", per_k),
        ("Last-layer PC1 per k (shared basis)", pc1_figure(per_k), PC1_CAPTION),
    ], manifest)
