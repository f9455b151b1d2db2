"""What a steering run found (:mod:`analyses.steer.run`): the verdict table its report and
summary open with.

One row reads the clean axis (Paper III's read-out, no control), then one row per headline
edit -- the largest cut, keep-only, the strongest shift each way, and any other surviving
condition -- each the run's declared primary test: the change in KL(Bayes ‖ model) under the
edit along the entropy axis against the same edit along the control directions, its Holm p
over the primary family, how many controls reached it and how many could before the verdict
falls, the parametric p or why it is withheld, the energy the controls moved against the
axis' and the effective number of their effects. Every verdict is the run's own
(``EffectStat.survives``); none where the run withheld it (``EffectStat.withheld``: the
controls do not move the axis' energy, or too few independent draws) or was a quick run.

Example:
    >>> _label("cut+1"), _label("cut+0.5"), _label("keep_only"), _label("shift-2")
    ('full cut of the axis component', 'cut of 50 % of the axis component', \
'keep only the axis component', 'shift of -2σ along the axis')
"""

from __future__ import annotations

import math

from ..kit.findings import Finding
from ..kit.learned import gate
from ..kit.numbers import sig
from .result import EffectStat, SteerResult
from .stats import PRIMARY_EFFECT, PRIMARY_METRIC, p_text

#: the most condition rows a verdict table gets
MAX_CONDITIONS = 5

#: the controls in words, by :attr:`analyses.steer.result.ControlSet.method`
METHOD_NAMES = {"independent": "independent random directions, each carrying the axis' energy "
                               "exactly where the edits are applied",
                "orthonormal": "random directions in orthonormal frames, each carrying the "
                               "axis' energy where the edits are applied",
                "unmatched": "independent random directions (no direction carries the axis' "
                             "energy where the edits are applied)",
                "variance": "variance-matched random directions",
                "norm": "norm-matched random directions",
                "pcs": "other principal components"}


def _param(cond: str) -> float:
    """The fraction or δ of a condition key (``cut+0.5`` → 0.5; NaN for keep-only)."""
    for kind in ("cut", "shift"):
        if cond.startswith(kind):
            try:
                return float(cond[len(kind):])
            except ValueError:
                return math.nan
    return math.nan


def _label(cond: str) -> str:
    """A condition key in words."""
    v = _param(cond)
    if cond == "keep_only":
        return "keep only the axis component"
    if cond.startswith("cut"):
        return ("full cut of the axis component" if v == 1 else
                f"cut of {100 * v:g} % of the axis component")
    if cond.startswith("shift"):
        return f"shift of {v:+g}σ along the axis"
    return cond


def headline_conditions(r: SteerResult) -> list[str]:
    """The conditions the verdict table shows, in run order: the largest cut, keep-only, the
    most negative and most positive shift, then surviving others (at most
    :data:`MAX_CONDITIONS`)."""
    cuts = [c for c in r.conditions if c.startswith("cut")]
    shifts = sorted((c for c in r.conditions if c.startswith("shift")), key=_param)
    pick = {max(cuts, key=_param)} if cuts else set()
    pick |= {c for c in r.conditions if c == "keep_only"}
    pick |= {shifts[0], shifts[-1]} if shifts else set()
    pick |= set(r.survivors) | set(r.survivors_parametric)
    return [c for c in r.conditions if c in pick][:MAX_CONDITIONS]


def controls_name(r: SteerResult) -> str:
    """The run's controls in words (each layer's method, once)."""
    methods = dict.fromkeys(c.method for c in r.controls.values())
    return "; ".join(METHOD_NAMES.get(m, m) for m in methods) or r.null


def _readout(r: SteerResult) -> Finding:
    layer = str(r.layers[-1])
    v = r.clean.axis_proj_corr.get(layer, math.nan)
    why = ("the axis coordinate is constant over the prompts" if layer in
           r.clean.axis_proj_corr else "not recorded by this run")
    return Finding(
        f"the entropy axis reads the model's entropy on the clean pass (Paper III read-out: "
        f"corr(axis.project(x), H_model), layer {layer}, per prompt)", v,
        control="none: the axis is fitted to this entropy on these prompts",
        survives=None, evidence="in-sample fit, no control; the edits below test use",
        undefined=why)


def _no_verdict(r: SteerResult, st: EffectStat) -> str:
    """Why this condition gets no verdict ('' when it does)."""
    if r.quick:
        return "quick run: not a result"
    return f"verdict withheld: {st.withheld}" if st.withheld else ""


def reach_text(st: EffectStat) -> str:
    """How far the permutation verdict is from the floor: the controls that reached the axis
    and the most with which the verdict would stand.

    Example:
        >>> reach_text(EffectStat(0.1, 0.0, 1 / 241, 9.0, n_null=240, n_reached=0,
        ...                       n_reached_max=3, survives=True))
        '0 of 240 controls reached it; it survives up to 3 (margin 3)'
    """
    if st.n_reached < 0:
        return "no permutation p"
    head = f"{st.n_reached} of {st.n_null} controls reached it"
    if st.survives:
        return (f"{head}; it survives up to {st.n_reached_max} (margin "
                f"{st.n_reached_max - st.n_reached})")
    if st.n_reached_max < 0:
        return f"{head}; it could not survive even if none had"
    return f"{head}; it would survive with at most {st.n_reached_max}"


def _edit_row(r: SteerResult, cond: str, st: EffectStat) -> Finding:
    m = len(r.conditions)
    control = (f"{r.n_random} {controls_name(r)}: mean {sig(st.null_mean)} ± "
               f"{sig(st.null_std)} bits")
    side = ("larger" if abs(st.axis) > abs(st.null_mean) else "smaller") \
        if math.isfinite(st.axis) and math.isfinite(st.null_mean) else "undefined"
    parametric = (f"parametric p (Holm, primary) {sig(st.p_z_holm_primary)}"
                  if math.isfinite(st.p_z_holm_primary) else
                  f"parametric p withheld: {st.parametric_withheld or 'undefined'}")
    evidence = [f"p (Holm, primary family of {m}) {sig(st.p_holm_primary)}",
                f"raw p {p_text(st.p, st.n_null, st.at_floor)}: {reach_text(st)}",
                parametric, f"|effect| {side} than the controls'",
                f"energy moved, controls / axis {st.energy_ratio_min:.3f}–"
                f"{st.energy_ratio_max:.3f}",
                f"effective number of the controls' effects {sig(st.n_effective)} (effects "
                f"sharing nothing: {sig(st.n_effective_independent)})"]
    why = _no_verdict(r, st)
    survives: bool | None = None if why else st.survives
    if why:
        evidence.insert(0, why)
    elif r.n_random < r.controls_needed:
        evidence.append(f"with {r.n_random} controls no permutation p can survive Holm "
                        f"(needs {r.controls_needed})")
    if r.notes:
        evidence.append("confound: " + r.notes[0].split(":")[0])
    return Finding(
        f"{_label(cond)}: ΔKL(Bayes ‖ model) against the same edit along the controls "
        f"(Paper III intervention at every edited layer; the primary test, {PRIMARY_EFFECT} "
        "effect, mean over prompts)", st.axis, control=control,
        survives=survives, evidence="; ".join(evidence), unit="bits",
        undefined="the edited pass gave no finite KL to the exact posterior")


def _edits(result: SteerResult) -> list[Finding]:
    rows = []
    for cond in headline_conditions(result):
        st = result.headline.get(cond, {}).get(PRIMARY_EFFECT, {}).get(PRIMARY_METRIC)
        if st is not None:
            rows.append(_edit_row(result, cond, st))
    return rows


def findings(result: SteerResult) -> list[Finding]:
    """The verdict table of a steering run (module doc)."""
    return gate([_readout(result), *_edits(result)], result.learned)


def edit_rows(result: SteerResult) -> list[Finding]:
    """The verdict table without the read-out row (a combined table's steering rows): the
    headline edits, behind a wind tunnel's learned check."""
    return gate(_edits(result), result.learned)
