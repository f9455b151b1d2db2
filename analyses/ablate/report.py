"""The summary, figure, report and terminal view of ``bayesgeom ablate``
(:mod:`analyses.ablate.run`). Every MAE is the per-sample entropy MAE in bits against the exact
posterior; ΔMAE = MAE(ablated) − MAE(clean); "× clean" = MAE(ablated) / MAE(clean).

The verdict table holds each Paper I claim against the run's controls: the layer claim against
Paper I's own threshold (bypassing any single layer raises the MAE more than
:data:`LAYER_FACTOR` times the clean model's); the frame head and the retrain have no threshold
in the paper or the run, so they carry their numbers beside their controls and no verdict.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd
import plotly.graph_objects as go

from ... import interp
from ...windtunnel.task import TokenTask
from ..kit.findings import Finding, findings_text
from ..kit.html import html_report
from ..kit.numbers import num, sig
from .result import AblateResult, AblationEval, RetrainResult

#: Paper I: removing any single layer raises the error more than this many times
LAYER_FACTOR = 10.0
#: what to look for in :func:`delta_figure`
DELTA_CAPTION = ("Look for: one bar towering over the other zeroed layer-0 heads (Paper I's "
                 "frame head), and each zeroing against the mean-ablation of the same head or "
                 "sublayer: a zero bar far above its mean bar is an off-distribution shift, not "
                 "lost computation. One colour per task size, its clean MAE in the legend.")
NO_CRITERION = "no criterion: neither the paper nor the run sets a threshold"

CONTROL_TEXT = {
    "mean": "control: mean-ablation of the same head or sublayer (its output replaced by its "
            "per-position mean over the first held-out batch); the clean MAE is in every row",
    "none": "control: the clean model's MAE only (--control none)",
}


def _head_eval(ev: AblationEval, g: pd.DataFrame) -> None:
    z = g[(g["family"] == "head") & (g["condition"] == "zero")]
    if z.empty:
        return
    ev.head_delta_median_bits = float(z["delta_mae_bits"].median())
    w = z.loc[z["delta_mae_bits"].idxmax()]
    ev.worst_head = f"L{int(w['layer'])}H{int(w['head'])}"
    ev.worst_head_delta_mae_bits = float(w["delta_mae_bits"])
    z0 = z[z["layer"] == 0].sort_values("delta_mae_bits", ascending=False)
    top = z0.iloc[0]
    ev.frame_head = f"L0H{int(top['head'])}"
    ev.frame_delta_mae_bits = float(top["delta_mae_bits"])
    if len(z0) > 1 and z0.iloc[1]["delta_mae_bits"] > 0:
        ev.frame_ratio_to_second = float(top["delta_mae_bits"] / z0.iloc[1]["delta_mae_bits"])
    mean = g[(g["family"] == "head") & (g["condition"] == "mean") & (g["layer"] == 0)
             & (g["head"] == top["head"])]
    if not mean.empty:
        ev.frame_mean_ablation_delta_mae_bits = float(mean["delta_mae_bits"].iloc[0])


def summarise(cfg: Any, m: interp.InterpModel, task: TokenTask, table: pd.DataFrame,
              retrain: RetrainResult | None, wall_s: float) -> AblateResult:
    """The summary of a finished run (``cfg``: its
    :class:`~analyses.ablate.run.AblateConfig`)."""
    s = AblateResult(m.info.name, task.name, cfg.n, cfg.seed, cfg.control, retrain=retrain,
                         wall_s=round(wall_s, 2))
    for label, g in (table.groupby("eval", sort=False) if not table.empty else []):
        clean = g[g["family"] == "clean"].iloc[0]
        params = dict(task.config())
        if str(label).startswith("K="):
            params["K"] = int(str(label)[2:])
        ev = AblationEval(str(label), params, float(clean["mae_bits"]), float(clean["accuracy"]))
        _head_eval(ev, g)
        by = g[(g["family"] == "layer") & (g["condition"] == "bypass")]
        if not by.empty:
            ev.min_bypass_ratio = float(by["ratio"].min())
        cum = g[g["family"] == "cumulative"]
        if not cum.empty:
            ev.embedding_only_mae_bits = float(cum.loc[cum["through"].idxmax(), "mae_bits"])
        s.evals.append(ev)
    return s


def condition_names(table: pd.DataFrame) -> pd.Series:
    """A short name per row: ``zero L0H2``, ``mean_attn L1``, ``bypass L0..L1``, ``clean``."""

    def name(r: pd.Series) -> str:
        if r["family"] == "clean":
            return "clean"
        if r["family"] == "head":
            return f"{r['condition']} L{r['layer']}H{r['head']}"
        if r["family"] == "cumulative":
            return f"bypass L0..L{r['through']}"
        return f"{r['condition']} L{r['layer']}"

    return table.apply(name, axis=1) if not table.empty else pd.Series(dtype=str)


def delta_figure(table: pd.DataFrame) -> go.Figure:
    """ΔMAE (bits) per condition, one bar group per task size; log y axis when positive."""
    fig = go.Figure()
    t = table[table["family"] != "clean"].assign(name=condition_names(table))
    for label, g in t.groupby("eval", sort=False):
        clean = float(g["clean_mae_bits"].iloc[0])
        fig.add_trace(go.Bar(x=g["name"], y=g["delta_mae_bits"],
                             name=f"{label} (clean {clean:.3g} bits)"))
    fig.update_layout(barmode="group", yaxis_title="ΔMAE = MAE(ablated) − MAE(clean), bits",
                      height=420, margin={"t": 30}, xaxis_tickangle=-45)
    if not t.empty and (t["delta_mae_bits"] > 0).all():
        fig.update_yaxes(type="log")
    return fig


def retrain_table(r: RetrainResult) -> pd.DataFrame:
    return pd.DataFrame([{"model": row.model, "K": row.K, "mae_bits": row.mae_bits,
                          "accuracy": row.accuracy} for row in r.rows])


def _eval_rows(e: AblationEval) -> list[Finding]:
    """The frame-head and single-layer claims of one task size."""
    rows = []
    at = f"[{e.label}] "
    if e.frame_head is not None:
        rows.append(Finding(
            f"{at}one layer-0 head carries calibration (Paper I 'hypothesis-frame head': "
            f"zeroing {e.frame_head} raises the entropy MAE most; ΔMAE per sample)",
            e.frame_delta_mae_bits, unit="bits",
            control=f"mean-ablation of {e.frame_head} ΔMAE "
                    f"{sig(e.frame_mean_ablation_delta_mae_bits)} bits; median head ΔMAE "
                    f"{sig(e.head_delta_median_bits)} bits",
            evidence=f"{NO_CRITERION} for 'comparable damage'; "
                     f"{sig(e.frame_ratio_to_second)}× the second layer-0 head (Paper I's "
                     "later check: 2.74×); worst head overall "
                     f"{e.worst_head} {sig(e.worst_head_delta_mae_bits)} bits",
            undefined="the ablated model gave no finite MAE"))
    if e.min_bypass_ratio is not None:
        ratio = e.min_bypass_ratio
        rows.append(Finding(
            f"{at}every layer is needed (Paper I: bypassing any single layer raises the "
            f"entropy MAE > {LAYER_FACTOR:g}×; smallest ratio over layers)", ratio,
            unit="× clean", control=f"clean model {sig(e.clean_mae_bits)} bits",
            survives=(ratio > LAYER_FACTOR) if np.isfinite(ratio) else None,
            evidence=f"criterion: Paper I's > {LAYER_FACTOR:g}×; embedding only "
                     f"{sig(e.embedding_only_mae_bits)} bits",
            undefined="the clean MAE is 0, so no ratio"))
    return rows


def _retrain_row(r: RetrainResult) -> Finding | None:
    """The retrained model against its unablated control at the largest K evaluated."""
    ks = [row.K for row in r.rows]
    k = max((x for x in ks if x is not None), default=None)
    at = [row for row in r.rows if k == row.K]
    ablated = next((row for row in at if row.model.startswith("retrained")), None)
    control = next((row for row in at if row.model.startswith("control (unablated")), None)
    if ablated is None:
        return None
    per_k = "; ".join(f"K={row.K}: {sig(row.mae_bits)}" for row in r.rows
                      if row.model.startswith("retrained"))
    return Finding(
        f"retrained without attention in its top layers {r.layers} (Paper I: fits the "
        f"trained K, fails at larger K; entropy MAE per sample "
        f"{'on the trained task' if k is None else f'at K={k}'})", ablated.mae_bits,
        unit="bits", control="unablated control, same budget "
                             + (f"{sig(control.mae_bits)} bits" if control else "not run"),
        evidence=f"{NO_CRITERION}; retrained MAE per K: {per_k}",
        undefined="the retrained model gave no finite MAE")


def findings(result: AblateResult) -> list[Finding]:
    """The verdict table of an ablation run (module doc), per task size, then the retrain."""
    rows = [f for e in result.evals for f in _eval_rows(e)]
    if result.retrain is not None:
        rr = _retrain_row(result.retrain)
        rows += [rr] if rr is not None else []
    return rows


def format_summary(s: AblateResult) -> str:
    """The verdict table (:func:`findings`), then :func:`summary_table`."""
    return findings_text(findings(s)) + "\n" + summary_table(s)


def summary_table(s: AblateResult) -> str:
    """The terminal view: per task size the clean MAE, the frame head and the layer results;
    then the retrain beside its control."""
    lines = [f"{s.model} · {s.task} · ablations on {s.n_sequences} held-out sequences "
             f"(seed {s.seed}); entropy MAE in bits", CONTROL_TEXT[s.control]]
    for e in s.evals:
        lines.append(f"[{e.label}] clean {num(e.clean_mae_bits, 3, 'g')} (accuracy "
                     f"{e.clean_accuracy:.3f})")
        if e.frame_head is not None:
            lines.append(f"  frame head {e.frame_head}: ΔMAE {num(e.frame_delta_mae_bits, 3, 'g')} "
                         f"({num(e.frame_ratio_to_second, 3, 'g')}× the second layer-0 head; mean-"
                         "ablation ΔMAE "
                         f"{num(e.frame_mean_ablation_delta_mae_bits, 3, 'g')}); median "
                         f"head ΔMAE {num(e.head_delta_median_bits, 3, 'g')}; worst head "
                         f"{e.worst_head} {num(e.worst_head_delta_mae_bits, 3, 'g')}")
        if e.min_bypass_ratio is not None:
            lines.append("  bypassing any one layer: MAE ≥ "
                         f"{num(e.min_bypass_ratio, 3, 'g')}× clean")
        if e.embedding_only_mae_bits is not None:
            lines.append(f"  every layer bypassed (embedding only): "
                         f"{num(e.embedding_only_mae_bits, 3, 'g')}")
    if s.retrain is not None:
        r = s.retrain
        lines.append(f"retrain {r.intervention} (layers {r.layers}; steps {r.steps}, stopped "
                     f"by {r.stop_reasons}):")
        for row in r.rows:
            lines.append(f"  K={row.K}: {row.model:<48} MAE {num(row.mae_bits, 3, 'g')}  accuracy "
                         f"{row.accuracy:.3f}")
    return "\n".join(lines)


def write_report(path: Path, s: AblateResult, table: pd.DataFrame,
                 manifest: dict[str, Any]) -> Path:
    sections: list[tuple[str, object] | tuple[str, object, str]] = [
        ("Summary", summary_table(s)), ("How to read it", CONTROL_TEXT[s.control])]
    if not table.empty:
        shown = table.assign(condition=condition_names(table))[
            ["eval", "condition", "mae_bits", "delta_mae_bits", "ratio", "accuracy",
             "clean_mae_bits"]]
        sections += [("ΔMAE per condition", delta_figure(table), DELTA_CAPTION),
                     ("Every condition", shown)]
    if s.retrain is not None:
        sections.append((f"Retrained without top-layer attention ({s.retrain.intervention}) "
                         "beside its control", retrain_table(s.retrain)))
    return html_report(path, f"Ablations — {s.model}", findings(s), sections, manifest)
