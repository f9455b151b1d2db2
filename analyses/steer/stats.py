"""Each steering edit's effect against its null of control directions, with the energies the
edits moved, how many independent controls the null rests on, and multiplicity-adjusted p.

Per condition × effect × metric (``effects.parquet``):

* ``axis``: the axis edit's effect (change from the clean pass, ``d_<metric>``, or the metric
  itself for those already relative to it); ``null_mean``/``null_std``: the controls';
* ``p``: the permutation-style p = (1 + #{|control| ≥ |axis|}) / (n + 1) (:func:`probes.null_test`),
  whose floor 1/(n + 1) is flagged by ``at_floor``; exact for controls drawn independently
  (the axis is then exchangeable with them under the null that it is one more);
* ``p_holm``: Holm over every test of the run (all conditions, effects and metrics);
* ``primary``: the declared primary test of each condition, :data:`PRIMARY_METRIC` (the change
  in KL(Bayes ‖ model), the distance to the exact posterior) on the :data:`PRIMARY_EFFECT`
  effect; ``p_holm_primary``: Holm over the primary tests only (one per condition);
  ``n_reached``: the controls at least as extreme as the axis, ``n_reached_max``: the most
  that could have been and the verdict still stand (:func:`probes.holm_reach`; −1: none);
* ``energy_axis``/``energy_null``: the energy the axis edit and (mean over) the control edits
  moved where they are applied (:func:`analyses.steer.nulls.edit_energy`, mean over the edited
  layers); ``energy_ratio_min``/``_max``: control / axis, per control and layer; the
  condition is ``energy_matched`` when every ratio lies within
  :data:`probes.energy_controls.ENERGY_TOLERANCE` of 1 (a shift always is: it adds (δσ)²
  along any direction);
* ``n_effective``: the effective number of the controls' *effects*, the participation ratio of
  the correlations of their per-prompt ΔKL(Bayes ‖ model) over the prompts
  (:func:`probes.effective_number.effect_effective_number`), beside
  ``n_effective_independent``, what effects that share nothing give at this n and P;
* ``n_draws``: how many independent draws the null's spread rests on: the count of controls
  drawn independently, or, for controls that are not (orthonormal frames, the other PCs),
  the effective number of their effects, min(n, ``n_effective``);
* ``z`` = (axis − null mean) / null std; ``shapiro_p``: the Shapiro–Wilk p of the control
  effects; the **parametric** ``p_z`` reads the axis as one more draw from a normal null
  (:func:`probes.null_test.predictive_p`, Student t with ``n_draws`` − 1 degrees of freedom)
  and is given only where that null passes the normality check (shapiro_p ≥
  :data:`probes.null_test.NORMALITY_ALPHA`), else NaN and ``parametric_withheld`` says why;
  ``p_z_holm_primary`` is Holm over the primary tests that have one;
* ``withheld``: why the test gets no verdict ("" when it does): its controls do not move the
  axis' energy, or the null rests on fewer than
  :data:`probes.energy_controls.EFFECTIVE_FLOOR` independent draws (``verdict_withheld``);
  ``survives``: p_holm_primary ≤ :data:`ALPHA` and not withheld; ``survives_parametric``:
  p_z_holm_primary ≤ α and not withheld.

Why the floor on draws, and why the effects' effective number is not it for independent
draws. A null's spread estimated from k independent draws has a relative standard error of
1/√(2(k − 1)), worse than 16 % below 20, and the Student t quantile at the smallest Holm
threshold of six conditions is more than 11 % above the normal one at 19 degrees of freedom.
Controls drawn independently *are* independent draws of the null, whatever their effects
share: effects that are one pattern at varying strength (n_effective near 1) make a null of
one scalar, which the permutation p still reads exactly. Controls built together are not, and
for them the effects' effective number (which counts a shared pattern as dependence) is the
conservative count. A low n_effective is reported either way: it says the null is one effect.

The permutation p of the primary family can survive Holm only with at least
:func:`controls_needed` controls; by default a run takes enough that a verdict no control
reaches survives with :data:`analyses.steer.config.MARGIN` controls to spare.
"""

from __future__ import annotations

import numpy as np
import pandas as pd

from ...probes import POSITION_CONFOUND_R2, ProbeConfig, holm, null_test, position_only_r2
from ...probes.effective_number import effect_effective_number
from ...probes.energy_controls import EFFECTIVE_FLOOR, ENERGY_TOLERANCE
from ...probes.multiple_testing import holm_reach
from ...probes.null_test import NORMALITY_ALPHA, normality_p, predictive_p
from ..kit.numbers import num
from .config import controls_needed  # noqa: F401 (re-exported)
from .result import ControlSet
from .scores import DELTA_METRICS, LAYER_METRICS, RELATIVE_METRICS

PRIMARY_METRIC = "d_kl_bayes"
PRIMARY_EFFECT = "total"
ALPHA = 0.05


def too_few(n_draws: float) -> bool:
    """Fewer than :data:`probes.energy_controls.EFFECTIVE_FLOOR` independent draws (to float
    rounding); NaN counts as too few."""
    return bool(not n_draws >= EFFECTIVE_FLOOR - 1e-6)


def effect_numbers(per_prompt: pd.DataFrame | None) -> dict[tuple[str, str], tuple[float,
                                                                                   float]]:
    """(condition, effect) -> (effective number of the controls' per-prompt ΔKL(Bayes ‖
    model), what independent effects give) from the long ``per_prompt`` table (condition,
    effect, direction, prompt, value; clean rows have condition "clean")."""
    if per_prompt is None or per_prompt.empty:
        return {}
    clean = per_prompt[per_prompt["condition"] == "clean"].set_index("prompt")["value"]
    out = {}
    edited = per_prompt[(per_prompt["condition"] != "clean")
                        & (per_prompt["direction"] != "axis")]
    for (cond, eff), g in edited.groupby(["condition", "effect"], sort=False):
        wide = g.pivot(index="direction", columns="prompt", values="value")
        delta = wide.to_numpy(float) - clean.reindex(wide.columns).to_numpy(float)[None, :]
        e = effect_effective_number(delta)
        out[(str(cond), str(eff))] = (e.value, e.independent)
    return out


def effects_table(table: pd.DataFrame, head_layer: int, per_prompt: pd.DataFrame | None = None,
                  independent: bool = True) -> pd.DataFrame:
    """The effects of every edited condition (module doc) from the long ``table`` of
    :func:`analyses.steer.scores.tidy` rows, clean rows included; per-layer metrics are read
    at ``head_layer``; ``per_prompt``: the per-prompt KL(Bayes ‖ model) of every pass
    (:func:`effect_numbers`); ``independent``: whether the controls were drawn independently
    (module doc)."""
    overall = table[table["group"].isna()]
    clean = overall[overall["condition"] == "clean"]
    energy = _energies(overall[overall["metric"] == "edit_energy"])
    numbers = effect_numbers(per_prompt)
    recs = []
    edited = overall[(overall["condition"] != "clean") & (overall["effect"] != "edit")]
    for (cond, kind, param, eff), g in edited.groupby(
            ["condition", "kind", "param", "effect"], sort=False, dropna=False):
        n_eff, n_ind = numbers.get((str(cond), str(eff)), (np.nan, np.nan))
        for metric in (*DELTA_METRICS, *RELATIVE_METRICS):
            sel, ref_rows = g[g["metric"] == metric], clean[clean["metric"] == metric]
            if metric in LAYER_METRICS:
                sel = sel[sel["layer"] == head_layer]
                ref_rows = ref_rows[ref_rows["layer"] == head_layer]
            if sel.empty:
                continue
            ref = 0.0
            if metric in DELTA_METRICS:
                ref = float(ref_rows["value"].iloc[0]) if len(ref_rows) else np.nan
            axis = sel[sel["direction"] == "axis"]["value"].to_numpy(float) - ref
            null = sel[sel["direction"] != "axis"]["value"].to_numpy(float) - ref
            a = float(axis[0]) if axis.size else float("nan")
            rec = {"condition": cond, "kind": kind, "param": param, "effect": eff,
                   "metric": f"d_{metric}" if metric in DELTA_METRICS else metric, "axis": a,
                   "null_mean": np.nan, "null_std": np.nan, "n_null": 0, "p": np.nan,
                   "at_floor": False, "z": np.nan, "shapiro_p": np.nan, "p_z": np.nan,
                   "parametric_withheld": "", "n_effective": n_eff,
                   "n_effective_independent": n_ind, "n_draws": np.nan}
            if axis.size and np.isfinite(null).any():
                t = null_test(a, null)
                draws = float(t.n) if independent else min(float(t.n), n_eff)
                rec |= {"null_mean": t.null_mean, "null_std": t.null_std, "n_null": t.n,
                        "p": t.p, "at_floor": t.at_floor, "z": t.z, "n_draws": draws}
                rec |= _parametric(a, null, draws)
            recs.append(rec | energy.get(str(cond), _NO_ENERGY))
    return adjust(pd.DataFrame(recs))


_NO_ENERGY = {"energy_axis": np.nan, "energy_null": np.nan, "energy_ratio_min": np.nan,
              "energy_ratio_max": np.nan}


def _parametric(effect: float, null: np.ndarray, draws: float) -> dict:
    """The Shapiro p of the control effects and the parametric p where they pass it."""
    sw = normality_p(null)
    if not np.isfinite(sw):
        return {"shapiro_p": sw, "parametric_withheld": "the controls' effects have no spread"}
    if sw < NORMALITY_ALPHA:
        return {"shapiro_p": sw, "parametric_withheld": f"the controls' effects are not normal "
                                                         f"(Shapiro–Wilk p {sw:.2g})"}
    return {"shapiro_p": sw, "p_z": predictive_p(effect, null, draws - 1)}


def _energies(rows: pd.DataFrame) -> dict[str, dict[str, float]]:
    """condition -> energy of the axis edit and mean energy of the control edits (each the
    mean over the edited layers), and the range of control / axis energy over controls and
    layers."""
    out = {}
    for cond, g in rows.groupby("condition", sort=False):
        per_dir = g.groupby("direction")["value"].mean()
        ctrl = per_dir.drop("axis", errors="ignore")
        wide = g.pivot_table(index="direction", columns="layer", values="value")
        lo = hi = np.nan
        if "axis" in wide.index and len(wide) > 1:
            ratios = wide.drop("axis").to_numpy(float) / wide.loc["axis"].to_numpy(float)
            lo, hi = float(np.nanmin(ratios)), float(np.nanmax(ratios))
        out[str(cond)] = {"energy_axis": float(per_dir.get("axis", np.nan)),
                          "energy_null": float(ctrl.mean()) if len(ctrl) else np.nan,
                          "energy_ratio_min": lo, "energy_ratio_max": hi}
    return out


def energy_matched(lo: float, hi: float) -> bool:
    """Whether controls moving ``lo``–``hi`` of the axis' energy move it, within
    :data:`probes.energy_controls.ENERGY_TOLERANCE`."""
    return bool(lo >= 1 - ENERGY_TOLERANCE and hi <= 1 + ENERGY_TOLERANCE)


def withheld_reason(energy_lo: float, energy_hi: float, n_draws: float) -> str:
    """Why a test gets no verdict ("" when it does): module doc."""
    out = []
    if not energy_matched(energy_lo, energy_hi):
        out.append(f"the controls move {energy_lo:.3f}–{energy_hi:.3f} of the axis' energy "
                   f"where the edits are applied (a verdict needs 1 ± {ENERGY_TOLERANCE:g})")
    if not np.isfinite(n_draws):
        out.append("no finite control effect to compare with")
    elif too_few(n_draws):
        out.append(f"the null's spread rests on {n_draws:.3g} independent draws (a verdict "
                   f"needs {EFFECTIVE_FLOOR})")
    return "; ".join(out)


def adjust(effects: pd.DataFrame) -> pd.DataFrame:
    """Add ``p_holm``, ``primary``, ``p_holm_primary``, ``p_z_holm_primary``, ``n_reached``,
    ``n_reached_max``, ``energy_matched``, ``withheld``, ``verdict_withheld``, ``survives``
    and ``survives_parametric`` (module doc) to an effects table with ``p``, ``p_z``,
    ``n_null``, ``n_draws`` and the energy ratios."""
    e = effects.copy()
    if e.empty:
        return e
    e["p_holm"] = holm(e["p"].to_numpy(float))
    e["primary"] = (e["metric"] == PRIMARY_METRIC) & (e["effect"] == PRIMARY_EFFECT)
    prim = np.flatnonzero(e["primary"].to_numpy())
    for col, src in (("p_holm_primary", "p"), ("p_z_holm_primary", "p_z")):
        e[col] = np.nan
        e.loc[e["primary"], col] = holm(e.loc[e["primary"], src].to_numpy(float))
    p, n = e["p"].to_numpy(float), e["n_null"].to_numpy(int)
    e["n_reached"] = np.where(np.isfinite(p), np.round(p * (n + 1) - 1), -1).astype(int)
    e["n_reached_max"] = -1
    for j, i in enumerate(prim):
        if np.isfinite(p[i]):
            e.loc[e.index[i], "n_reached_max"] = holm_reach(p[prim], n[prim], j, ALPHA)
    e["energy_matched"] = [energy_matched(lo, hi) for lo, hi in
                           zip(e["energy_ratio_min"], e["energy_ratio_max"], strict=True)]
    e["withheld"] = [withheld_reason(lo, hi, d) for lo, hi, d in
                     zip(e["energy_ratio_min"], e["energy_ratio_max"], e["n_draws"],
                         strict=True)]
    e["verdict_withheld"] = e["withheld"] != ""
    e["survives"] = e["p_holm_primary"].le(ALPHA) & ~e["verdict_withheld"]
    e["survives_parametric"] = e["p_z_holm_primary"].le(ALPHA) & ~e["verdict_withheld"]
    return e


def p_text(p: float, n_null: int, at_floor: bool) -> str:
    """A p-value for reading: "≤ 1/(n+1)" at the permutation floor, else three decimals.

    Example:
        >>> p_text(1 / 21, 20, True), p_text(0.4286, 20, False), p_text(float("nan"), 0, False)
        ('≤ 1/21', '0.429', 'n/a')
    """
    if at_floor:
        return f"≤ 1/{n_null + 1}"
    return num(p, 3)


def controls_adequate(controls: dict[str, ControlSet], effects: pd.DataFrame) -> bool:
    """Whether every verdict against the controls means something: every layer's controls
    carry the axis' energy and every primary test rests on enough independent draws."""
    prim = effects[effects["primary"]] if len(effects) else effects
    return bool(all(c.matched for c in controls.values())
                and not (len(prim) and prim["verdict_withheld"].any()))


def confound_notes(positions: np.ndarray, h_bayes: np.ndarray, seed: int = 0) -> list[str]:
    """A plain note when the exact entropy of the prompts is (almost) a function of their final
    token's position -- bijection without replacement -- so an axis fitted to entropy is an
    axis of position."""
    r2, design = position_only_r2(positions, h_bayes, ProbeConfig(seed=seed))
    if not r2 >= POSITION_CONFOUND_R2:
        return []
    return [f"position alone predicts the exact entropy of these prompts (cross-validated R² "
            f"{r2:.3f}, {design}): the entropy axis here is also a position axis, and its "
            "effects are effects of editing position; use a task whose entropy varies at a "
            "fixed position (hmm, or bijection with --replacement)"]
