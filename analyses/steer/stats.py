"""Each steering edit's effect against its null of control directions, with the energies the
edits moved and multiplicity-adjusted p-values.

Per condition × effect × metric (``effects.parquet``):

* ``axis``: the axis edit's effect (change from the clean pass, ``d_<metric>``, or the metric
  itself for those already relative to it); ``null_mean``/``null_std``: the controls';
* ``p``: the permutation-style p = (1 + #{|control| ≥ |axis|}) / (n + 1) (:func:`probes.null_test`),
  whose floor 1/(n + 1) is flagged by ``at_floor`` (and printed "≤ 1/(n+1)");
* ``p_holm``: Holm over every test of the run (all conditions, effects and metrics);
* ``primary``: the declared primary test of each condition, :data:`PRIMARY_METRIC` (the change
  in KL(Bayes ‖ model), the distance to the exact posterior) on the :data:`PRIMARY_EFFECT`
  effect; ``p_holm_primary``: Holm over the primary tests only (one per condition);
* ``z`` = (axis − null mean) / null std and its **parametric** two-sided ``p_z``: the axis
  effect read as one more draw from a normal null, (axis − mean) / (std·√(1 + 1/n)) against a
  Student t with n_eff − 1 degrees of freedom, n_eff the controls' effective number
  (:func:`probes.effective_number.effective_number`; correlated controls estimate the spread
  from fewer independent draws than their count); with ``p_z_holm_primary``;
* ``survives``: p_holm_primary ≤ :data:`ALPHA`; ``survives_parametric``: p_z_holm_primary ≤ α;
  both withheld (False) when the controls amount to fewer than
  :data:`probes.energy_controls.EFFECTIVE_FLOOR` independent ones (``verdict_withheld``);
* ``energy_axis``/``energy_null``: the energy the axis edit and (mean over) the control edits
  moved where they are applied (:func:`analyses.steer.nulls.edit_energy`, mean over the
  edited layers), so a reader can check that the null moved as much as the axis.

The permutation p of the primary family can survive Holm only with at least
:func:`controls_needed` controls (its floor 1/(n + 1) must be below α/m for m conditions).

Why 20 is the floor for a verdict: with fewer effective draws the null's spread is estimated to
worse than 1/√(2·19) ≈ 16 % (relative standard error of a standard deviation), and the Student
t quantile at the smallest Holm threshold of six conditions (two-sided 0.05/6) is more than
11 % above the normal one (2.94 vs 2.64 at 19 degrees of freedom), so the normality that the
parametric p leans on can no longer be taken for granted; and a permutation p among fewer than
20 independent draws cannot go below 1/21 in substance, whatever the count of controls.
"""

from __future__ import annotations

import math

import numpy as np
import pandas as pd
from scipy import stats as sps

from ...probes import POSITION_CONFOUND_R2, ProbeConfig, holm, null_test, position_only_r2
from ...probes.energy_controls import EFFECTIVE_FLOOR, ENERGY_TOLERANCE
from .config import controls_needed  # noqa: F401 (re-exported)
from .result import ControlSet
from .scores import DELTA_METRICS, LAYER_METRICS, RELATIVE_METRICS

PRIMARY_METRIC = "d_kl_bayes"
PRIMARY_EFFECT = "total"
ALPHA = 0.05


def too_few(n_effective: float) -> bool:
    """Fewer than :data:`probes.energy_controls.EFFECTIVE_FLOOR` effective controls (to float
    rounding: k orthonormal directions have a participation ratio of k up to ~1e-12)."""
    return bool(not n_effective >= EFFECTIVE_FLOOR - 1e-6)


def prediction_p(effect: float, null: np.ndarray, n_effective: float) -> float:
    """Two-sided parametric p of ``effect`` as one more draw from the normal null of the finite
    control effects ``null`` [n] (module doc: Student t, n_eff − 1 degrees of freedom)."""
    r = np.asarray(null, dtype=np.float64)
    r = r[np.isfinite(r)]
    if r.size < 2 or not np.isfinite(effect):
        return float("nan")
    sd = float(r.std(ddof=1))
    if not sd > 1e-9 * max(abs(float(r.mean())), abs(effect), 1e-300):
        return float("nan")  # no spread beyond float rounding: nothing to be normal about
    t = (effect - float(r.mean())) / (sd * math.sqrt(1 + 1 / r.size))
    df = max(min(float(n_effective), float(r.size)) - 1, 1.0)
    return float(2 * sps.t.sf(abs(t), df))


def effects_table(table: pd.DataFrame, head_layer: int, n_effective: float = math.inf,
                  ) -> pd.DataFrame:
    """The effects of every edited condition (module doc) from the long ``table`` of
    :func:`analyses.steer.scores.tidy` rows, clean rows included; per-layer metrics are read
    at ``head_layer``; ``n_effective``: the controls' effective number (smallest over the
    edited layers)."""
    overall = table[table["group"].isna()]
    clean = overall[overall["condition"] == "clean"]
    energy = _energies(overall[overall["metric"] == "edit_energy"])
    recs = []
    edited = overall[(overall["condition"] != "clean") & (overall["effect"] != "edit")]
    for (cond, kind, param, eff), g in edited.groupby(
            ["condition", "kind", "param", "effect"], sort=False, dropna=False):
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
                   "at_floor": False, "z": np.nan, "p_z": np.nan}
            if axis.size and np.isfinite(null).any():
                t = null_test(a, null)
                rec |= {"null_mean": t.null_mean, "null_std": t.null_std, "n_null": t.n,
                        "p": t.p, "at_floor": t.at_floor, "z": t.z,
                        "p_z": prediction_p(a, null, n_effective)}
            recs.append(rec | energy.get(cond, {"energy_axis": np.nan, "energy_null": np.nan}))
    return adjust(pd.DataFrame(recs), withheld=too_few(n_effective))


def _energies(rows: pd.DataFrame) -> dict[str, dict[str, float]]:
    """condition -> energy of the axis edit and mean energy of the control edits (each the
    mean over the edited layers)."""
    out = {}
    for cond, g in rows.groupby("condition", sort=False):
        per_dir = g.groupby("direction")["value"].mean()
        ctrl = per_dir.drop("axis", errors="ignore")
        out[str(cond)] = {"energy_axis": float(per_dir.get("axis", np.nan)),
                          "energy_null": float(ctrl.mean()) if len(ctrl) else np.nan}
    return out


def adjust(effects: pd.DataFrame, withheld: bool = False) -> pd.DataFrame:
    """Add ``p_holm``, ``primary``, ``p_holm_primary``, ``p_z_holm_primary``, ``survives``,
    ``survives_parametric`` and ``verdict_withheld`` (module doc) to an effects table with
    ``p`` and ``p_z``; ``withheld``: the controls are too few independent draws for any
    verdict."""
    e = effects.copy()
    if e.empty:
        return e
    e["p_holm"] = holm(e["p"].to_numpy(float))
    e["primary"] = (e["metric"] == PRIMARY_METRIC) & (e["effect"] == PRIMARY_EFFECT)
    for col, src in (("p_holm_primary", "p"), ("p_z_holm_primary", "p_z")):
        e[col] = np.nan
        e.loc[e["primary"], col] = holm(e.loc[e["primary"], src].to_numpy(float))
    e["verdict_withheld"] = bool(withheld)
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
    return "n/a" if not np.isfinite(p) else f"{p:.3f}"


def shortfalls(c: ControlSet) -> tuple[bool, bool]:
    """How one layer's controls fall short of the null they stand for: (unmatched: they do not
    carry the axis' energy where the edits are applied, within
    :data:`probes.energy_controls.ENERGY_TOLERANCE`, so a cut or keep-only along them moves
    more or less than along the axis; collapsed: they amount to fewer than
    :data:`probes.energy_controls.EFFECTIVE_FLOOR` independent controls, and every verdict is
    withheld)."""
    unmatched = not (c.energy_ratio_min >= 1 - ENERGY_TOLERANCE
                     and c.energy_ratio_max <= 1 + ENERGY_TOLERANCE)
    collapsed = too_few(c.n_effective)
    return unmatched, collapsed


def controls_adequate(controls: dict[str, ControlSet]) -> bool:
    """Whether a verdict against the controls means anything: every layer's controls carry the
    axis' energy and amount to enough independent ones (:func:`shortfalls`)."""
    return not any(any(shortfalls(c)) for c in controls.values())


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
