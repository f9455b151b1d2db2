"""Figures, tables, the terminal view and the HTML report of a steering experiment
(:mod:`analyses.steer.run`)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd
import plotly.graph_objects as go
from plotly.subplots import make_subplots

from ...probes.energy_controls import EFFECTIVE_FLOOR, ENERGY_TOLERANCE
from ...probes.null_test import NORMALITY_ALPHA
from ..kit.findings import findings_text
from ..kit.html import COLORS, html_report
from .findings import findings
from .passes import EFFECTS
from .result import EffectStat, SteerResult
from .scores import RELATIVE_METRICS
from .stats import p_text

#: (kind, metric, y label) panels of the dose–response figure
#: what to look for in :func:`dose_response`
DOSE_CAPTION = ("Look for: an entropy-axis line (one colour per effect; solid total, dotted "
                "norm-frozen, dashed direct-path) leaving the shaded band of the same colour, "
                "where 90 % of the control edits fall; inside the band the axis edit does no "
                "more than an edit of equal energy along a control direction.")
#: what to look for in :func:`per_group`
GROUP_CAPTION = ("Look for: the dashed axis-edit lines moving away from the clean model's "
                 "line, and towards or away from the black exact-Bayes line; lines on top of "
                 "the clean one mean the edit leaves the model's uncertainty as it was.")

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
    """Axis effect (each effect: total, norm_frozen, direct_path) against the control
    directions' 5–95 % band, for the cut-fraction and shift-δ sweeps."""
    fig = make_subplots(rows=2, cols=2, subplot_titles=[p[2] for p in PANELS])
    for i, (kind, metric, _label) in enumerate(PANELS):
        r, c = divmod(i, 2)
        t = _change(table, metric)
        t = t[t["kind"] == kind]
        if t.empty:
            continue
        for j, (eff, dash) in enumerate(zip(EFFECTS, ("solid", "dot", "dash"), strict=True)):
            e = t[t["effect"] == eff]
            if e.empty:
                continue
            color = COLORS[j % len(COLORS)]
            null = e[e["direction"] != "axis"].groupby("param")["change"]
            lo, hi = null.quantile(0.05), null.quantile(0.95)
            xs = lo.index.to_numpy()
            fig.add_scatter(x=np.r_[xs, xs[::-1]], y=np.r_[hi.to_numpy(), lo.to_numpy()[::-1]],
                            fill="toself", line={"width": 0, "color": color},
                            fillcolor=color, opacity=0.25,
                            name=f"controls 5–95 % ({eff})", legendgroup=f"null-{eff}",
                            showlegend=i == 0, row=r + 1, col=c + 1)
            a = e[e["direction"] == "axis"].sort_values("param")
            fig.add_scatter(x=a["param"], y=a["change"], mode="lines+markers",
                            line={"dash": dash, "color": color},
                            name=f"entropy axis ({eff})",
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
                    mode="lines+markers", line={"color": COLORS[0]})
    metric = f"h_model_by_{g}"
    for i, cond in enumerate(("cut+1", "keep_only", "shift-1", "shift+1"), start=1):
        t = table[(table["condition"] == cond) & (table["direction"] == "axis")
                  & (table["effect"] == "total") & (table["metric"] == metric)]
        if not t.empty:
            t = t.sort_values("group")
            fig.add_scatter(x=t["group"].astype(int), y=t["value"], name=f"axis {cond}",
                            mode="lines+markers",
                            line={"dash": "dash", "color": COLORS[i % len(COLORS)]})
    fig.update_layout(template="plotly_white", xaxis_title=g,
                      yaxis_title="mean entropy over the hypotheses (bits)")
    return fig


def effects_view(effects: pd.DataFrame) -> pd.DataFrame:
    """The effects table for reading: raw p (floor shown as "≤ 1/(n+1)"), its Holm adjustments,
    the controls that reached the axis, the parametric z-test (labelled so; withheld where the
    controls' effects are not normal), survival of the primary test or why it is withheld, the
    energies moved and the effective number of the controls' effects."""
    keep = ["d_mae", "d_corr", "d_kl_bayes", "d_h_model", "kl_clean", "top1_flip",
            "d_axis_corr", "d_axis_proj_corr"]
    e = effects[effects["metric"].isin(keep)].copy()
    if e.empty:
        return e
    e["p"] = [p_text(p, n, f) for p, n, f in zip(e["p"], e["n_null"], e["at_floor"],
                                                 strict=True)]
    e = e.rename(columns={"p_z": "p_z (parametric)",
                          "p_z_holm_primary": "p_z_holm_primary (parametric)"})
    return e[["condition", "effect", "metric", "axis", "null_mean", "null_std", "p", "p_holm",
              "primary", "p_holm_primary", "n_reached", "n_reached_max", "survives",
              "withheld", "z", "shapiro_p", "p_z (parametric)",
              "p_z_holm_primary (parametric)", "survives_parametric", "energy_axis",
              "energy_null", "energy_ratio_min", "energy_ratio_max", "n_effective",
              "n_effective_independent", "n_draws"]]


NULL_TEXT = {"energy": "random directions orthogonal to the axis, drawn independently, each "
                       "carrying its energy where the edits are applied",
             "orthonormal": "random directions orthogonal to the axis, in mutually orthogonal "
                            "frames where those can carry its energy where the edits are "
                            "applied (else drawn independently)",
             "variance": "random directions orthogonal to the axis carrying its variance over "
                         "the fitted final-token activations (not the energy an edit removes "
                         "where it is applied)",
             "norm": "random directions orthogonal to the axis with its norm (not its "
                     "variance: a top-variance axis moves more than they can)",
             "pcs": "the other principal components of the standardised activations, "
                    "orthogonalised against the axis"}
EDIT_TEXT = {"readout": "the axis' raw-space readout direction",
             "standardised": "the axis' standardised PC1 used as a raw direction (Paper III's "
                             "code)"}


def controls_text(r: SteerResult) -> str:
    """Per layer: how the controls were drawn, their energy / the axis' energy where the edits
    are applied, the energy one direction orthogonal to the axis can carry and how many
    mutually orthogonal ones can carry the axis'."""
    out = []
    for k, v in r.controls.items():
        reach = (f"; one direction ⟂ axis carries {v.reach_min:.2f}–{v.reach_max:.2f}× its "
                 f"energy, {v.orthogonal} mutually orthogonal ones can carry it exactly"
                 if np.isfinite(v.reach_max) else "")
        out.append(f"L{k} {v.method}{'' if v.independent else ' (not independent draws)'}, "
                   f"energy ratio {v.energy_ratio_min:.3f}–{v.energy_ratio_max:.3f}{reach} "
                   f"(directions: mean |cos| {v.mean_abs_cos:.2f})")
    return "; ".join(out)


def setup_text(r: SteerResult) -> str:
    """What was edited, against which null, and how the p-values read (report and summary)."""
    vocab = ("next-token metrics (kl_clean, top1_flip, dh_next) read the hypothesis tokens "
             "only, the logits a wind tunnel was trained on" if r.vocabulary == "hypotheses"
             else "next-token metrics read the full vocabulary")
    effects = ["total"] + (["norm_frozen: final-norm scale frozen at its clean value"]
                           if r.norm_frozen else [])
    if r.direct_path:
        effects.append("direct_path: downstream components held clean (path patching)")
    return (f"Edits along {EDIT_TEXT.get(r.edit_space, r.edit_space)} at "
            f"{', '.join(r.sites)} ({r.positions} positions), against {r.n_random} controls "
            f"per layer: {NULL_TEXT.get(r.null, r.null)}; {controls_text(r)}. Energy = mean "
            "‖x' − x‖² / mean ‖x‖² over every edited position of the clean pass; a condition "
            f"whose controls move other than 1 ± {ENERGY_TOLERANCE:g} of the axis' energy gets "
            f"no verdict. Effects: {'; '.join(effects)}. {vocab.capitalize()}. p = (1 + "
            f"#{{|control| ≥ |axis|}}) / (n + 1), never below ≤ 1/{r.n_random + 1}; Holm over "
            f"all tests (p_holm) and over the primary family, {r.primary}, one test per "
            "condition (p_holm_primary); n_reached: controls at least as extreme as the axis, "
            "n_reached_max: the most with which the verdict would stand. z against the "
            "controls with a parametric p (p_z: the axis as one more draw of a normal null, "
            "Student t with n_draws − 1 degrees of freedom), given only where the controls' "
            f"effects pass Shapiro–Wilk at {NORMALITY_ALPHA:g}. n_effective: the participation "
            "ratio of the correlations of the controls' per-prompt ΔKL(Bayes ‖ model), how "
            "many distinct effects they have (n_effective_independent: what effects sharing "
            "nothing give); n_draws: the independent draws the null rests on (the controls' "
            "count when drawn independently), a verdict needs "
            f"{EFFECTIVE_FLOOR}. axis_corr = corr(x'·u, H) cannot move under a cut (NaN after a "
            "full one); axis_proj_corr is Paper III's read-out, corr(axis.project(x'), H). "
            + control_caveats(r))


def control_caveats(r: SteerResult) -> str:
    """Plain warnings where the controls fall short of the null they stand for: a layer's
    controls that do not carry the axis' energy (with the reason), and each primary test
    whose verdict is withheld."""
    out = []
    for k, c in r.controls.items():
        if c.reason:
            out.append(f"L{k}: {c.reason}.")
        if not c.matched:
            out.append(f"L{k}: the controls carry {c.energy_ratio_min:.3f}–"
                       f"{c.energy_ratio_max:.3f} of the axis' energy where the edits are "
                       "applied, so a cut or keep-only along them moves "
                       f"{'less' if c.energy_ratio_max < 1 else 'more'} than along the axis: "
                       "those conditions get no verdict (shifts move δσ along any direction "
                       "and keep theirs).")
    for cond, effs in r.headline.items():
        st = effs.get("total", {}).get("d_kl_bayes")
        if st is not None and st.withheld:
            out.append(f"{cond}: no verdict, {st.withheld}.")
    return " ".join(out)


def write_report(path: Path, result: SteerResult, table: pd.DataFrame,
                 effects: pd.DataFrame, manifest: dict[str, Any]) -> Path:
    c = result.clean
    intro = (f"{result.model} on {result.task} ({result.n_prompts} prompts). "
             + setup_text(result) + f" Clean: calibration MAE {c.mae:.3f} bits, "
             f"corr(H_model, H_Bayes) {_f(c.corr, 3)}, KL(Bayes ‖ model) {c.kl_bayes:.3f} "
             "bits. " + survival_text(result) + "".join(f" Note: {n}" for n in result.notes))
    return html_report(path, f"bayesgeom steer: {result.model}", findings(result), [
        ("Set-up", intro),
        ("Dose–response against control directions", dose_response(table), DOSE_CAPTION),
        (f"Entropy per {result.group_name}", per_group(table, result), GROUP_CAPTION),
        ("Effects and p-values", effects_view(effects)),
    ], manifest, quick=result.quick)


def survival_text(s: SteerResult) -> str:
    """Which conditions' primary test survives multiplicity adjustment, plainly."""
    n = len(s.conditions)
    quick = "Quick run: a smoke test, not a result. " if s.quick else ""
    if s.verdict_withheld:
        return (f"{quick}Primary test {s.primary}: no verdict on any condition (the caveats "
                "say why).")
    perm = ", ".join(_signed(s, c) for c in s.survivors) or "none"
    par = ", ".join(_signed(s, c) for c in s.survivors_parametric) or "none"
    text = (f"Primary test {s.primary}, Holm over {n} condition(s) at 0.05: survives with "
            f"the permutation p: {perm}; with the parametric test (where the controls' "
            f"effects are normal): {par}.")
    withheld = [c for c, effs in s.headline.items()
                if effs.get("total", {}).get("d_kl_bayes", _NONE).withheld]
    if withheld:
        text += f" No verdict on {', '.join(withheld)} (the caveats say why)."
    if s.n_random < s.controls_needed:
        text += (f" With {s.n_random} controls the smallest permutation p is 1/"
                 f"{s.n_random + 1} = {1 / (s.n_random + 1):.3f}, and Holm over {n} needs < "
                 f"{0.05 / n:.4f}: no permutation test can survive; {s.controls_needed} "
                 "controls could.")
    return quick + text


_NONE = EffectStat(float("nan"), float("nan"), float("nan"), float("nan"))


def _signed(s: SteerResult, cond: str) -> str:
    """A surviving condition with the direction of its difference and its margin: the tests
    are two-sided, so an axis effect *smaller* than every control's survives too (the axis
    matters less)."""
    stat = s.headline.get(cond, {}).get("total", {}).get("d_kl_bayes")
    if stat is None or not np.isfinite(stat.z):
        return cond
    side = "larger" if abs(stat.axis) > abs(stat.null_mean) else "smaller"
    return (f"{cond} (|effect| {side} than the controls', z = {stat.z:+.1f}, "
            f"{stat.n_reached} of {stat.n_null} controls reach it, up to "
            f"{stat.n_reached_max} could)")


def format_summary(s: SteerResult) -> str:
    """A quick run's banner, the verdict table (:func:`findings`), then :func:`details_text`."""
    quick = "QUICK RUN: a smoke test, no number below is a result\n" if s.quick else ""
    return quick + findings_text(findings(s)) + "\n" + details_text(s)


def details_text(s: SteerResult) -> str:
    """A compact terminal table: per condition and effect, the axis effect on calibration MAE,
    KL to the exact posterior and to the clean distribution (each with its raw p, "≤ 1/(n+1)"
    at the floor), flips, the axis read-outs and the energy moved by the axis vs the controls;
    then which primary tests survive adjustment."""
    c = s.clean
    head = (f"{s.model} · {s.task} · {s.n_prompts} prompts · sites {', '.join(s.sites)} · "
            f"{s.n_random} {s.null} controls · edit {s.edit_space}"
            + (" · next-token metrics on the hypothesis tokens only"
               if s.vocabulary == "hypotheses" else "") + "\n"
            f"clean: MAE {_f(c.mae)} bits, corr(H_model, H_Bayes) {_f(c.corr)}, "
            f"KL(Bayes‖model) {_f(c.kl_bayes)} bits, axis corr "
            + ", ".join(f"L{k} {_f(v)}" for k, v in c.axis_corr.items())
            + "; controls: " + controls_text(s))
    lines = [head, f"{'condition':<12} {'effect':<11} {'ΔMAE bits (p)':>20} "
             f"{'ΔKL→Bayes (p)':>20} {'KL→clean (p)':>20} {'flips':>6} {'Δaxis corr':>11} "
             f"{'ΔP3 read-out':>12} {'energy axis':>11} {'ctrl/axis':>13} {'n_eff':>5}"]
    for cond, effs in s.headline.items():
        for eff, mets in effs.items():
            def cell(k: str, mets: dict = mets) -> str:
                r = mets.get(k)
                if r is None:
                    return "n/a"
                return f"{_f(r.axis)} ({p_text(r.p, r.n_null, r.at_floor)})"

            def val(k: str, mets: dict = mets) -> float | None:
                return mets[k].axis if k in mets else None

            st = mets.get("d_kl_bayes") or next(iter(mets.values()), _NONE)
            ratio = (f"{st.energy_ratio_min:.3f}" if abs(st.energy_ratio_max
                                                       - st.energy_ratio_min) < 5e-4
                     else f"{st.energy_ratio_min:.3f}–{st.energy_ratio_max:.3f}")
            lines.append(f"{cond:<12} {eff:<11} {cell('d_mae'):>20} {cell('d_kl_bayes'):>20} "
                         f"{cell('kl_clean'):>20} {_f(val('top1_flip'), 2):>6} "
                         f"{_f(val('d_axis_corr'), 2):>11} {_f(val('d_axis_proj_corr'), 2):>12}"
                         f" {_f(st.energy_axis, 4):>11} {ratio:>13} {_f(st.n_effective, 1):>5}")
    lines.append("P3 read-out: Paper III's corr(axis.project(x'), H); energy axis: mean "
                 "‖x'−x‖² / mean ‖x‖²; ctrl/axis: the controls' energy over the axis' (min–max); "
                 "n_eff: effective number of the controls' per-prompt ΔKL→Bayes; p: "
                 "permutation against the controls, unadjusted.")
    lines.append(survival_text(s))
    caveats = control_caveats(s)
    notes = [f"note: {n}" for n in s.notes]
    return "\n".join([*lines, caveats, *notes] if caveats else [*lines, *notes])


def _f(x: float | None, nd: int = 3) -> str:
    if x is None or (isinstance(x, float) and not np.isfinite(x)):
        return "n/a"
    if nd == 3 and 0 < abs(x) < 5e-4:
        return f"{x:+.1e}"  # effects below the printed precision stay visible
    return f"{x:+.{nd}f}" if nd == 3 else f"{x:.{nd}f}"
