"""Tables, the terminal view and the HTML report of a steering experiment (figures:
:mod:`analyses.steer.figures`; the run: :mod:`analyses.steer.run`)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from ...probes.energy_controls import EFFECTIVE_FLOOR, ENERGY_TOLERANCE
from ...probes.null_test import NORMALITY_ALPHA
from ..kit.findings import findings_text
from ..kit.html import html_report
from ..kit.numbers import MISSING, num, signed
from .figures import DOSE_CAPTION, GROUP_CAPTION, dose_response, per_group
from .findings import findings
from .result import EffectStat, SteerResult
from .stats import p_text


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
             f"corr(H_model, H_Bayes) {signed(c.corr)}, KL(Bayes ‖ model) {c.kl_bayes:.3f} "
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
    head = "Quick run: a smoke test, not a result. " if s.quick else ""
    if s.learned is not None and not s.learned.learned:
        c = s.learned
        head += (f"The wind tunnel has not learned its task (entropy MAE {c.mae_bits:.3g} "
                  f"bits against the {c.baseline}'s {c.baseline_bits:.3g}): every verdict "
                  "is withheld; the tests below say only what they would have said. ")
    if s.verdict_withheld:
        return (f"{head}Primary test {s.primary}: no verdict on any condition (the caveats "
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
    return head + text


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


def setup_line(s: SteerResult) -> str:
    """One paragraph: model, task, prompts, sites, controls and edit space; the clean pass'
    calibration, KL to the exact posterior and axis read-outs; the controls in words."""
    c = s.clean
    return (f"{s.model} · {s.task} · {s.n_prompts} prompts · sites {', '.join(s.sites)} · "
            f"{s.n_random} {s.null} controls · edit {s.edit_space}"
            + (" · next-token metrics on the hypothesis tokens only"
               if s.vocabulary == "hypotheses" else "") + "\n"
            f"clean: MAE {signed(c.mae)} bits, corr(H_model, H_Bayes) {signed(c.corr)}, "
            f"KL(Bayes‖model) {signed(c.kl_bayes)} bits, axis corr "
            + ", ".join(f"L{k} {signed(v)}" for k, v in c.axis_corr.items())
            + "; controls: " + controls_text(s))


#: what the columns of :func:`details_frame` mean
DETAILS_KEY = ("P3 read-out: Paper III's corr(axis.project(x'), H); energy axis: mean "
               "‖x'−x‖² / mean ‖x‖²; ctrl/axis: the controls' energy over the axis' (min–max); "
               "n_eff: effective number of the controls' per-prompt ΔKL→Bayes; p: "
               "permutation against the controls, unadjusted (\"≤ 1/(n+1)\" at the floor).")


def details_frame(s: SteerResult) -> pd.DataFrame:
    """Per condition and effect, the axis effect on calibration MAE, KL to the exact
    posterior and to the clean distribution (each beside its raw permutation p), flips, the
    axis read-outs, the energy the axis edit moved and the controls' over it, and the
    effective number of the controls' effects (:data:`DETAILS_KEY`); strings as printed."""
    rows = []
    for cond, effs in s.headline.items():
        for eff, mets in effs.items():
            def val(k: str, nd: int | None = None, mets: dict = mets) -> str:
                """The axis effect ``k``: signed to 3 decimals, or to ``nd`` unsigned."""
                if k not in mets:
                    return MISSING
                return signed(mets[k].axis) if nd is None else num(mets[k].axis, nd)

            def p(k: str, mets: dict = mets) -> str:
                r = mets.get(k)
                return MISSING if r is None else p_text(r.p, r.n_null, r.at_floor)

            st = mets.get("d_kl_bayes") or next(iter(mets.values()), _NONE)
            ratio = (f"{st.energy_ratio_min:.3f}" if abs(st.energy_ratio_max
                                                       - st.energy_ratio_min) < 5e-4
                     else f"{st.energy_ratio_min:.3f}–{st.energy_ratio_max:.3f}")
            rows.append({"condition": cond, "effect": eff,
                         "ΔMAE (bits)": val("d_mae"), "p ΔMAE": p("d_mae"),
                         "ΔKL→Bayes (bits)": val("d_kl_bayes"), "p ΔKL→Bayes": p("d_kl_bayes"),
                         "KL→clean (bits)": val("kl_clean"), "p KL→clean": p("kl_clean"),
                         "flips": val("top1_flip", 2), "Δaxis corr": val("d_axis_corr", 2),
                         "ΔP3 read-out": val("d_axis_proj_corr", 2),
                         "energy axis": num(st.energy_axis, 4), "ctrl/axis": ratio,
                         "n_eff": num(st.n_effective, 1)})
    return pd.DataFrame(rows)


def details_text(s: SteerResult) -> str:
    """The terminal view of :func:`setup_line` and :func:`details_frame`, then which primary
    tests survive adjustment, the controls' caveats and the run's notes."""
    frame = details_frame(s)
    lines = [setup_line(s)]
    if len(frame):
        widths = {c: max(len(c), *(len(v) for v in frame[c])) for c in frame.columns}
        lines.append(" ".join(c.ljust(widths[c]) if i < 2 else c.rjust(widths[c])
                              for i, c in enumerate(frame.columns)))
        lines += [" ".join(str(v).ljust(widths[c]) if i < 2 else str(v).rjust(widths[c])
                           for i, (c, v) in enumerate(r.items()))
                  for r in frame.to_dict("records")]
    lines += [DETAILS_KEY, survival_text(s)]
    caveats = control_caveats(s)
    notes = [f"note: {n}" for n in s.notes]
    return "\n".join([*lines, caveats, *notes] if caveats else [*lines, *notes])

