"""Figure, table and terminal view of a frame–precision run (:mod:`analyses.frame_precision.run`).

The figure puts every headline metric on one scale: (value − final value) / range, where the
range is max − min over all steps (step 0 included), so each curve ends at 0 and the plateau
band is ±tolerance, the same for all; frame metrics on the top panel, precision metrics on the
bottom one, against the training step on a log axis (step 0, the initialisation, is drawn at
half the first checkpoint's step and labelled "init"), each metric's plateau step marked.

:func:`findings` reads the run's own verdict (``frame_before_precision``: the frame's plateau step
before that of log10 per-sample MAE), then Paper I's layer-0 key |cos| and the per-sample MAE at
the final step against the step-0 initialisation and, for the keys, Gaussian keys (no test in
the run: they survive when below both, the rule ``bayesgeom monitor`` applies).

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

from ..kit.findings import Finding, findings_text
from ..kit.html import COLORS, html_report, readable
from ..kit.numbers import num, sig
from .result import PER_LAYER, PRECISION_METRICS, FramePrecisionResult

#: headline precision metrics drawn (the MAE on its log scale)
PRECISION_DRAWN = ("log10_entropy_mae_bits", "vm_pc1", "vm_linear_r2", "vm_abs_corr_pc1")
#: legend names of the drawn metrics
NAMES = {"js_to_final_bits": "JS to the final attention (bits)",
         "key_abs_cos": "layer-0 key mean |cos|",
         "attn_mass_feasible": "attention on feasible positions",
         "attn_mass_eliminated": "attention on eliminated values",
         "log10_entropy_mae_bits": "log10 per-sample entropy MAE (bits)",
         "vm_pc1": "value manifold PC1 share", "vm_linear_r2": "value manifold R² of H_Bayes",
         "vm_abs_corr_pc1": "|corr(PC1, H_Bayes)|"}
#: the criterion of a claim the run has no test for
RULE = "criterion: below both controls (monitor's beats-both rule); no significance test"


def findings(s: FramePrecisionResult) -> list[Finding]:
    """The verdict rows (module doc)."""
    f, p = s.frame_plateau_step, s.precision_plateau_step
    claim = (f"the frame settles before the precision (Paper I's frame–precision dissociation: "
             f"plateau step of the latest of {', '.join(NAMES.get(k, k) for k in s.frame_metrics)}"
             f"; plateau = within "
             f"{s.tolerance:g} × range of the final value)")
    before = sum(s.frame_before_each_precision_metric.values())
    each = (f"frame before {before} of {len(s.frame_before_each_precision_metric)} precision "
            "metrics; criterion: the run's frame_before_precision")
    nan = [k for k in (*s.frame_metrics, s.precision_metric) if s.plateau_steps.get(k) is None]
    control = ("precision plateau: " + (f"step {p:,}" if p is not None else "undefined")
               + " (log10 per-sample entropy MAE)")
    rows = [Finding(claim, None, control=control, survives=None, evidence=each,
                    undefined=f"no plateau step for {', '.join(nan)} (a non-finite value)")
            if f is None or p is None else
            Finding(claim, f, unit="steps", control=control, survives=s.frame_before_precision,
                    evidence=f"precision − frame = {p - f:+,} steps; {each}")]
    k0, k1 = s.init_values.get("key_abs_cos"), s.final_values.get("key_abs_cos")
    if k0 is not None and k1 is not None:
        g = s.key_abs_cos_gaussian
        rows.append(Finding(
            "layer-0 token keys are near-orthogonal at the end (Paper I: mean |off-diagonal "
            "cos| of E_tok[0..V−1] W_K; lower is more orthogonal; mean over heads)", k1,
            control=f"step-0 initialisation {sig(k0)}; Gaussian keys √(2/(π d)) {sig(g)}",
            survives=k1 < k0 and k1 < g,
            evidence=f"reduction against Gaussian keys {sig(100 * (1 - k1 / g))} % (Paper I: "
                     f"37 %); {RULE}"))
    m0, m1 = s.init_values.get("entropy_mae_bits"), s.final_values.get("entropy_mae_bits")
    if m0 is not None and m1 is not None:
        rows.append(Finding(
            "the posterior's entropy is matched at the end (Paper I's per-sample entropy MAE "
            "|H_model − H_Bayes|)", m1, unit="bits",
            control=f"step-0 initialisation {sig(m0)} bits",
            survives=m1 < m0, evidence=f"{sig(m0 / m1) if m1 else 'undefined'}× lower than at "
                                       "step 0; criterion: below the initialisation"))
    return rows


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
            colour = COLORS[(i + (row - 1) * len(s.frame_metrics)) % len(COLORS)]
            fig.add_trace(go.Scatter(
                x=x, y=y, name=NAMES.get(k, readable(k)), mode="lines+markers",
                line={"color": colour},
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


def format_summary(s: FramePrecisionResult) -> str:
    """The verdict table (:func:`findings`), then the per-metric view (:func:`details_text`)."""
    return findings_text(findings(s)) + "\n\n" + details_text(s)


def details_text(s: FramePrecisionResult) -> str:
    """A compact terminal view: per headline metric step-0 and final values and plateau step;
    then the claim."""
    lines = [f"frame–precision · {s.arch} on {s.task} · {s.run_dir} · {len(s.steps)} points, "
             f"steps 0..{s.final_step} · plateau: within {s.tolerance:g} x range of the final",
             f"{'metric':<26} {'group':<9} {'step 0':>9} {'final':>9} {'plateau':>8}"]
    for group, metrics in (("frame", s.frame_metrics), ("precision", PRECISION_METRICS)):
        for k in metrics:
            p = s.plateau_steps.get(k)
            lines.append(f"{k:<26} {group:<9} {num(s.init_values.get(k), 4, 'g'):>9} "
                         f"{num(s.final_values.get(k), 4, 'g'):>9} {'n/a' if p is None else p:>8}")
    lines.append("(key_abs_cos: Paper I's layer-0 token-key mean |cos| on E_tok[0..V−1], the "
                 "bijection's key tokens; of Gaussian keys: "
                 f"{num(s.key_abs_cos_gaussian, 4, 'g')}; MAE: per-sample, bits)")
    lines.append(f"frame plateaus at step {s.frame_plateau_step} (latest of "
                 f"{', '.join(s.frame_metrics)}); precision (log10 MAE) at step "
                 f"{s.precision_plateau_step} -> frame before precision: "
                 f"{s.frame_before_precision}")
    return "\n".join(lines)


def write_report(path: Path, s: FramePrecisionResult, table: pd.DataFrame,
                 manifest: dict[str, Any]) -> Path:
    return html_report(path, f"Frame–precision dissociation — {s.run_dir}", findings(s), [
        ("The run", f"{s.arch} on {s.task}, {len(s.steps)} points from step 0 (the "
                    f"initialisation) to {s.final_step:,}; {s.n} sequences in the fixed batch, "
                    f"{s.n_mae} for the MAE. Frame: {', '.join(s.frame_metrics)}; precision: "
                    f"{s.precision_metric}."),
        ("Definitions", f"Plateau step: {s.plateau_definition}. MAE: {s.mae_definition}. "
                        f"Attention mass: {s.attn_mass_metric} "
                        "(see analyses.frame_precision.run)."),
        ("Frame and precision against training step", figure(table, s),
         "Look for: the frame curves (top) entering the grey band -- within the tolerance of "
         "their final value -- at an earlier step than the precision curves (bottom); stars "
         "mark each metric's plateau, dashed lines the frame's and the precision's."),
        ("Per step (whole-model values) and plateau steps", headline_table(table, s)),
    ], manifest)
