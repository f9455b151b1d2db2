"""The demo's combined report, headline table and terminal summary (:mod:`analyses.demo.run`)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pandas as pd
import plotly.graph_objects as go

from ...windtunnel.training import TrainResult
from ..compare import report as compare_report
from ..kit.html import html_report
from ..steer import report as steering_report
from ..steer.result import SteerResult
from ..sula import report as sula_report
from .result import DemoResult

STEER_METRICS = ("d_mae", "d_kl_bayes", "kl_clean", "top1_flip", "d_axis_corr",
                 "d_axis_proj_corr")


def headline_table(r: DemoResult) -> pd.DataFrame:
    """Tidy headline numbers: section, subject, condition, metric, value, and for steering
    effects the raw permutation p, its Holm adjustment over every test of the run and the
    energy the axis edit and its controls moved (NaN where none)."""
    rows: list[dict[str, Any]] = []
    nan = float("nan")

    def add(section: str, subject: str, cond: str, metric: str, value: float,
            p: float = nan, p_holm: float = nan, energy_axis: float = nan,
            energy_null: float = nan) -> None:
        rows.append({"section": section, "subject": subject, "condition": cond,
                     "metric": metric, "value": float(value), "p": float(p),
                     "p_holm": float(p_holm), "energy_axis": float(energy_axis),
                     "energy_null": float(energy_null)})

    for subject, t in [*((t.arch, t) for t in r.windtunnel), ("hmm-transformer", r.hmm)]:
        for m in ("entropy_mae_bits", "kl_bits", "accuracy"):
            add("windtunnel", subject, "", m, getattr(t, m))
    for label, mets in r.compare.metrics.items():
        for k, v in mets.items():
            where, metric = k.split(".", 1)
            add("compare", label, where, metric, v)
    for cond, c in r.sula.conditions.items():
        for m in ("mae", "corr", "label_mass", "abs_rho_pc1_h_bayes"):
            add("sula", r.sula.model, cond, m, getattr(c, m))
    for name, st in (("steer_llm", r.steer_llm), ("steer_windtunnel", r.steer_windtunnel)):
        for cond, effs in st.headline.items():
            for eff, mets in effs.items():
                for m in STEER_METRICS:
                    if m in mets:
                        e = mets[m]
                        add(name, st.model, f"{cond} ({eff})", m, e.axis, e.p, e.p_holm,
                            e.energy_axis, e.energy_null)
    return pd.DataFrame(rows)


def windtunnel_figures(runs: dict[str, TrainResult]) -> tuple[go.Figure, go.Figure]:
    fig_h = go.Figure()
    bayes = runs["transformer"].report.per_position["h_bayes_bits"]
    fig_h.add_scatter(y=bayes, name="exact Bayes", mode="lines+markers")
    for a, r in runs.items():
        fig_h.add_scatter(y=r.report.per_position["h_model_bits"], name=a, mode="lines",
                          line={"dash": "dash"})
    fig_h.update_layout(xaxis_title="key position k", yaxis_title="predictive entropy (bits)",
                        template="plotly_white")
    fig_l = go.Figure()
    for a, r in runs.items():
        ev = r.log.dropna(subset=["eval_entropy_mae_bits"])
        fig_l.add_scatter(x=ev["elapsed_s"], y=ev["eval_entropy_mae_bits"], name=a,
                          mode="lines+markers")
    fig_l.update_layout(xaxis_title="training wall time (s)", yaxis_title="entropy MAE (bits)",
                        yaxis_type="log", template="plotly_white")
    return fig_h, fig_l


def _train_table(r: DemoResult) -> pd.DataFrame:
    rows = [{"task": f"bijection V={r.V}", **t.__dict__} for t in r.windtunnel]
    return pd.DataFrame([*rows, {"task": "hmm", **r.hmm.__dict__}])


def _steer_sections(title: str, st: SteerResult, d: Path) -> list[tuple[str, object]]:
    table = pd.read_parquet(d / "table.parquet")
    effects = pd.read_parquet(d / "effects.parquet")
    return [(title, steering_report.format_summary(st)),
            ("Dose–response against control directions", steering_report.dose_response(table)),
            (f"Entropy per {st.group_name}", steering_report.per_group(table, st)),
            ("Effects and p-values", steering_report.effects_view(effects))]


def write_report(out: Path, r: DemoResult, runs: dict[str, TrainResult],
                 manifest: dict[str, Any]) -> Path:
    fig_h, fig_l = windtunnel_figures(runs)
    cmp_table = pd.read_parquet(out / "compare" / "table.parquet")
    per_k = pd.read_parquet(out / "sula" / "per_k.parquet")
    sections: list[tuple[str, object]] = [("Quick run", QUICK_BANNER)] if r.quick else []
    sections += [
        ("1. Wind tunnels: bijection elimination (the transformer against MLPs) and HMM "
         "filtering (the geometry and steering tunnel)", _train_table(r)),
        ("Entropy calibration per position (held-out, bijection)", fig_h),
        ("Held-out entropy MAE during training", fig_l),
        ("2. Small vs large: the same geometry metrics (final layer)",
         compare_report.side_by_side(cmp_table)),
        ("Final-layer metrics", compare_report.bars_figure(cmp_table)),
        ("Per-layer curves on normalised depth",
         compare_report.curves_figure(pd.read_parquet(out / "compare" / "curves.parquet"))),
        (f"3. SULA on {r.sula.model}", sula_report.format_summary(r.sula)),
        ("SULA entropy per k (model vs exact Bayes)", sula_report.calibration_figure(per_k)),
        ("SULA per k", per_k),
        *_steer_sections("4. Steering the LLM's entropy axis", r.steer_llm, out / "steer-llm"),
        *_steer_sections("5. Steering the HMM wind tunnel's entropy axis", r.steer_windtunnel,
                         out / "steer-windtunnel"),
        ("Headline numbers (headline.parquet)", headline_table(r)),
        ("Step reports", "; ".join(
            str(out / p / "report.html") for p in ("compare", "compare/bijection",
                                                   "compare/hmm", "compare/llm", "sula",
                                                   "steer-llm", "steer-windtunnel"))),
    ]
    return html_report(out / "report.html", "bayesgeom demo", sections, manifest)


#: what a ``--quick`` demo says first, in the terminal and the report
QUICK_BANNER = ("QUICK RUN: every step is shrunk to a few minutes (CI's smoke test). The models "
                "are barely trained and the samples tiny, so no number below is a result: "
                "speed-ups, fits and p-values here say nothing about the models. Run "
                "`bayesgeom demo` without --quick for the real thing.")


def format_summary(r: DemoResult) -> str:
    """The terminal summary (the compare table is read from the compare step's folder, which
    the result names), opening with :data:`QUICK_BANNER` for a quick run."""
    with pd.option_context("display.float_format", lambda x: f"{x:.4g}", "display.width", 120):
        wt = _train_table(r).to_string(index=False)
    return "\n\n".join([*([QUICK_BANNER] if r.quick else []),
        "== wind tunnels (entropy MAE vs the exact posterior, bits)\n" + wt,
        "== small vs large (final layer)\n"
        + compare_report.format_summary(r.compare),
        "== SULA\n" + sula_report.format_summary(r.sula),
        "== steering the LLM\n" + steering_report.format_summary(r.steer_llm),
        "== steering the HMM wind tunnel\n"
        + steering_report.format_summary(r.steer_windtunnel),
        f"total {r.timings_s.get('total', float('nan')):.0f} s: " + ", ".join(
            f"{k} {v:.0f} s" for k, v in r.timings_s.items() if k != "total"),
    ])
