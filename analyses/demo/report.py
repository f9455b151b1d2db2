"""The demo's combined report, headline table and terminal summary (:mod:`analyses.demo.run`)."""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path
from typing import Any

import pandas as pd
import plotly.graph_objects as go

from ...windtunnel.training import TrainResult
from ..compare import report as compare_report
from ..kit.findings import Finding, findings_text
from ..kit.html import COLORS, html_report
from ..kit.numbers import sig
from ..steer import findings as steering_findings
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


#: what to look for in the demo's own figures
ENTROPY_CAPTION = ("Look for: the transformer's line on the black exact-Bayes line at every "
                   "key position; a context-blind model stays flat at log2 V, and a model "
                   "that uses the context partly falls between the two.")
TRAINING_CAPTION = ("Look for: the transformer's held-out MAE falling well below the MLP "
                    "baselines' within the same wall time (each marker is one held-out "
                    "evaluation; log scale).")
#: the demo's steering rows in its verdict table, per run (the primary edits, no read-out;
#: a wind tunnel's learned-check row comes first, beside them)
STEER_ROWS = 3


def windtunnel_figures(runs: dict[str, TrainResult]) -> tuple[go.Figure, go.Figure]:
    """Per key position, held-out predictive entropy of each bijection model against exact
    Bayes (bits); held-out entropy MAE against training wall time (s), one colour per model
    in both."""
    fig_h = go.Figure()
    bayes = runs["transformer"].report.per_position["h_bayes_bits"]
    fig_h.add_scatter(y=bayes, name="exact Bayes", mode="lines+markers",
                      line={"color": "black", "width": 3})
    dashes = ("solid", "dash", "dot", "dashdot")
    for i, (a, r) in enumerate(runs.items()):
        fig_h.add_scatter(y=r.report.per_position["h_model_bits"], name=a, mode="lines",
                          line={"color": COLORS[i % len(COLORS)], "dash": dashes[i % 4]})
    fig_h.update_layout(xaxis_title="key position k", yaxis_title="predictive entropy (bits)",
                        template="plotly_white")
    fig_l = go.Figure()
    for i, (a, r) in enumerate(runs.items()):
        ev = r.log.dropna(subset=["eval_entropy_mae_bits"])
        fig_l.add_scatter(x=ev["elapsed_s"], y=ev["eval_entropy_mae_bits"], name=a,
                          mode="lines+markers", line={"color": COLORS[i % len(COLORS)]})
    fig_l.update_layout(xaxis_title="training wall time (s)", yaxis_title="entropy MAE (bits)",
                        yaxis_type="log", template="plotly_white")
    return fig_h, fig_l


def windtunnel_findings(r: DemoResult) -> list[Finding]:
    """The wind tunnels' rows: the bijection transformer against its MLP baselines (same
    wall time), and the HMM transformer against the history-free and windowed filters on the
    same held-out sequences. A transformer survives when its MAE is below every control's
    (one seed: no interval, said in the evidence); a quick run gives no verdict."""
    by = {t.arch: t for t in r.windtunnel}
    tf = by.get("transformer")
    rows = []
    if tf is not None:
        base = {a: t.entropy_mae_bits for a, t in by.items() if a != "transformer"}
        best = min(base.values(), default=float("nan"))
        ratio = best / tf.entropy_mae_bits if tf.entropy_mae_bits > 0 else float("inf")
        rows.append(Finding(
            f"bijection (V = {r.V}): the transformer's predictive entropy follows the exact "
            "posterior (Paper I: per-sample entropy MAE, held-out)", tf.entropy_mae_bits,
            unit="bits", control="MLP baselines, same wall time: " + ", ".join(
                f"{a} {sig(v)} bits" for a, v in base.items()),
            survives=None if r.quick or not base else tf.entropy_mae_bits < best,
            evidence=("quick run: not a result" if r.quick else
                      f"{sig(ratio)}x below the best baseline; one seed, {tf.steps:,} steps"),
            undefined="the run was not evaluated"))
    lad = r.hmm_controls
    if lad:
        hf = lad.get("history-free", float("nan"))
        wins = sorted((int(k.split()[1]), v) for k, v in lad.items() if k.startswith("window"))
        beaten = [w for w, v in wins if r.hmm.entropy_mae_bits < v]
        reach = (f"better than every window up to {max(beaten)} observations"
                 if beaten else "no better than the shortest window")
        rows.append(Finding(
            "HMM: the transformer filters over the observation history (Paper I: per-sample "
            "entropy MAE against the exact filter, held-out)", r.hmm.entropy_mae_bits,
            unit="bits", control=f"history-free filter {sig(hf)} bits; " + ", ".join(
                f"window {w} {sig(v)}" for w, v in wins),
            survives=None if r.quick else r.hmm.entropy_mae_bits < hf,
            evidence=("quick run: not a result" if r.quick else
                      f"{reach}; one seed, {r.hmm.steps:,} steps"),
            undefined="the run was not evaluated"))
    return rows


def findings(r: DemoResult, compare_table: pd.DataFrame) -> list[Finding]:
    """The demo's verdict table: the wind tunnels (:func:`windtunnel_findings`), the
    comparison's rows (:func:`analyses.compare.report.findings`; ``compare_table`` is its
    ``table.parquet``), SULA's calibration row, and each steering run's primary edits."""
    rows = windtunnel_findings(r)
    rows += compare_report.findings(r.compare, compare_table)
    rows += sula_report.findings(r.sula)[:1]
    for who, st in (("LLM", r.steer_llm), ("HMM tunnel", r.steer_windtunnel)):
        rows += [replace(f, claim=f"steering the {who}: {f.claim}")
                 for f in steering_findings.edit_rows(st)[:STEER_ROWS + (st.learned is not None)]]
    if r.quick:  # every verdict of a quick run is withheld, whatever its step said
        rows = [replace(f, survives=None, evidence="quick run: not a result") for f in rows]
    return rows


def _train_table(r: DemoResult) -> pd.DataFrame:
    rows = [{"task": f"bijection V={r.V}", **t.__dict__} for t in r.windtunnel]
    return pd.DataFrame([*rows, {"task": "hmm", **r.hmm.__dict__}])


def _steer_sections(title: str, who: str, st: SteerResult, d: Path) -> list[tuple]:
    """One steering run's sections, each sub-heading naming the model (``who``)."""
    table = pd.read_parquet(d / "table.parquet")
    effects = pd.read_parquet(d / "effects.parquet")
    caveats = steering_report.control_caveats(st)
    return [(title, " ".join([steering_report.setup_line(st).replace("\n", "; "),
                              steering_report.survival_text(st),
                              *([caveats] if caveats else []), *st.notes])),
            (f"{who}: per condition, the axis edit's effects beside their raw p",
             steering_report.details_frame(st), steering_report.DETAILS_KEY),
            (f"{who}: dose–response against control directions",
             steering_report.dose_response(table), steering_report.DOSE_CAPTION),
            (f"{who}: entropy per {st.group_name}", steering_report.per_group(table, st),
             steering_report.GROUP_CAPTION),
            (f"{who}: effects and p-values", steering_report.effects_view(effects))]


def write_report(out: Path, r: DemoResult, runs: dict[str, TrainResult],
                 manifest: dict[str, Any]) -> Path:
    fig_h, fig_l = windtunnel_figures(runs)
    cmp_table = pd.read_parquet(out / "compare" / "table.parquet")
    per_k = pd.read_parquet(out / "sula" / "per_k.parquet")
    sections: list[tuple] = [
        ("1. Wind tunnels: bijection elimination (the transformer against MLPs) and HMM "
         "filtering (the geometry and steering tunnel)", _train_table(r)),
        ("HMM controls on the same held-out sequences", _hmm_table(r)),
        ("Entropy calibration per position (held-out, bijection)", fig_h, ENTROPY_CAPTION),
        ("Held-out entropy MAE during training", fig_l, TRAINING_CAPTION),
        ("2. Small vs large: the same geometry metrics (final layer)",
         compare_report.side_by_side(cmp_table)),
        ("Final-layer metrics", compare_report.bars_figure(cmp_table),
         compare_report.BARS_CAPTION),
        ("Per-layer curves on normalised depth",
         compare_report.curves_figure(pd.read_parquet(out / "compare" / "curves.parquet")),
         compare_report.CURVES_CAPTION),
        (f"3. SULA on {r.sula.model}", sula_report.summary_heading(r.sula)),
        ("SULA per condition", sula_report.summary_frame(r.sula)),
        ("SULA entropy per k (model vs exact Bayes)", sula_report.calibration_figure(per_k),
         sula_report.CALIBRATION_CAPTION),
        ("SULA per k", per_k),
        *_steer_sections("4. Steering the LLM's entropy axis", "LLM", r.steer_llm,
                         out / "steer-llm"),
        *_steer_sections("5. Steering the HMM wind tunnel's entropy axis", "HMM tunnel",
                         r.steer_windtunnel, out / "steer-windtunnel"),
        ("Headline numbers (headline.parquet)", headline_table(r)),
        ("Step reports", "; ".join(
            str(out / p / "report.html") for p in ("compare", "compare/bijection",
                                                   "compare/hmm", "compare/llm", "sula",
                                                   "steer-llm", "steer-windtunnel"))),
    ]
    return html_report(out / "report.html", "bayesgeom demo", findings(r, cmp_table), sections,
                       manifest, quick=r.quick)


def _hmm_table(r: DemoResult) -> pd.DataFrame:
    """The HMM transformer's MAE beside its controls (bits)."""
    rows = [{"predictor": "HMM transformer", "entropy_mae_bits": r.hmm.entropy_mae_bits}]
    rows += [{"predictor": f"{k} filter", "entropy_mae_bits": v}
             for k, v in r.hmm_controls.items()]
    return pd.DataFrame(rows)


#: what a ``--quick`` demo says first, in the terminal and the report
QUICK_BANNER = ("QUICK RUN: every step is shrunk to a few minutes (CI's smoke test). The models "
                "are barely trained and the samples tiny, so no number below is a result: "
                "speed-ups, fits and p-values here say nothing about the models. Run "
                "`bayesgeom demo` without --quick for the real thing.")


def format_summary(r: DemoResult) -> str:
    """The terminal summary, opening with :data:`QUICK_BANNER` for a quick run, then the
    verdict table (:func:`findings`), then each step's details (the compare tables are read
    from the compare step's folder, which the result names)."""
    with pd.option_context("display.float_format", lambda x: f"{x:.3g}", "display.width", 120):
        wt = _train_table(r).to_string(index=False)
        hmm = _hmm_table(r).to_string(index=False)
    cmp_dir = Path(next(iter(r.compare.models.values())).run_dir).parent
    return "\n\n".join([*([QUICK_BANNER] if r.quick else []),
        findings_text(findings(r, pd.read_parquet(cmp_dir / "table.parquet"))),
        "== wind tunnels (entropy MAE vs the exact posterior, bits)\n" + wt + "\n" + hmm,
        "== small vs large (final layer)\n"
        + compare_report.format_wide(pd.read_csv(cmp_dir / "side_by_side.csv")),
        "== SULA\n" + sula_report.summary_table(r.sula),
        "== steering the LLM\n" + steering_report.details_text(r.steer_llm),
        "== steering the HMM wind tunnel\n"
        + steering_report.details_text(r.steer_windtunnel),
        f"total {r.timings_s.get('total', float('nan')):.0f} s: " + ", ".join(
            f"{k} {v:.0f} s" for k, v in r.timings_s.items() if k != "total"),
    ])
