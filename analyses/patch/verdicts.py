"""Which cells, and which site kinds, carry the evidence beyond their controls.

A **cell survives** (in one direction) when all of these hold:

1. its evidence effect beats the same patch from an unrelated source (another pair's clean
   sequence, same target, same score): one-sided paired t-test over pairs, Holm-adjusted over
   every cell of the grid (the effective number of tests is stated beside it);
2. where an exact null exists, the lower end of its effect's BCa interval lies above the
   Bayes-null pairs' mean |effect| at the same cell: the effect is not off-distribution damage;
3. its recovered fraction's interval lies above the random-init twin's at the same cell (free
   pairs: its effect's); the trained weights, not the architecture, carry it.

A **site kind carries the evidence** when, in addition, the selection control holds: the best
of its cells chosen on half the pairs and scored on the other half (over ``n_splits`` splits)
beats the best of as many unrelated-source cells chosen and scored the same way, and the cell
chosen most often survives 1-3.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np
import pandas as pd

from ... import interp
from .config import PatchConfig
from .grid import Condition, conditions, group_of, kind_of
from .pairs import Pairs
from .result import Agreement, KindVerdict, TestFamily
from .scores import Measured
from .stats import ALPHA, HeldOut, cell_table, held_out_best, paired_tests, rank_agreement

#: a Bayes-null cell's mean |effect| may be at most this share of the evidence scale
NULL_TOLERANCE = 0.1


@dataclass
class Verdicts:
    """Everything judged: the per-cell ``table``, the ``attribution_table``, the kinds'
    verdicts, the test families, attribution's agreement and the controls' summaries."""

    metric: str
    table: pd.DataFrame
    attribution_table: pd.DataFrame
    kinds: list[KindVerdict] = field(default_factory=list)
    tests: list[TestFamily] = field(default_factory=list)
    agreement: list[Agreement] = field(default_factory=list)
    evidence_scale: dict[str, float] = field(default_factory=dict)
    null_max: dict[str, float] = field(default_factory=dict)
    null_own: dict[str, float] = field(default_factory=dict)
    null_tolerance: float = NULL_TOLERANCE
    twin_best_rf: dict[str, float] = field(default_factory=dict)
    unrelated_rows: np.ndarray = field(default_factory=lambda: np.zeros(0, dtype=np.int64))


def cell_frame(cells: list[interp.PatchCell], edit: int | None = None) -> pd.DataFrame:
    """One row per cell: site, kind (:func:`analyses.patch.grid.kind_of`), group
    (:func:`analyses.patch.grid.group_of`), layer, head, position (nullable integers: missing =
    every head / position) and label."""
    return pd.DataFrame({
        "site": [c.site for c in cells], "kind": [kind_of(c) for c in cells],
        "group": [group_of(c, edit) for c in cells],
        "layer": [c.layer for c in cells],
        "head": pd.array([c.head for c in cells], dtype="Int64"),
        "position": pd.array([c.position for c in cells], dtype="Int64"),
        "cell": [c.label for c in cells]})


def _nanmax(x: np.ndarray) -> float:
    """The largest finite value of ``x``, NaN when none is."""
    x = np.asarray(x, dtype=float)
    return float(x[np.isfinite(x)].max()) if np.isfinite(x).any() else float("nan")


def _survival(ev: dict[str, np.ndarray], p_holm: np.ndarray, null: dict[str, np.ndarray] | None,
              twin: dict[str, np.ndarray], exact: bool) -> np.ndarray:
    ok = np.nan_to_num(p_holm, nan=1.0) <= ALPHA
    if null is not None:
        ok &= ev["effect_low"] > null["abs_effect"]
    if exact:
        ok &= ev["recovered_fraction_low"] > twin["recovered_fraction_high"]
    else:
        ok &= ev["effect_low"] > twin["effect_high"]
    return ok


def _held(ms: Measured, cells: np.ndarray, pairs: Pairs, cfg: PatchConfig, rows: np.ndarray,
          ) -> HeldOut:
    strata = pairs.evidence.strata[rows] if rows.size else pairs.evidence.strata
    return held_out_best(ms, cells, strata, cfg.n_splits, cfg.seed)


def judge(cfg: PatchConfig, pairs: Pairs, cells: list[interp.PatchCell],
          got: dict[str, Measured], attribution: dict[str, np.ndarray]) -> Verdicts:
    """The :class:`Verdicts` of a run (module doc) from each condition's measurements ``got``
    (by :attr:`Condition.key`) and attribution's estimates by direction."""
    base = cell_frame(cells, pairs.edit_position)
    exact = pairs.evidence.p_clean is not None
    v = Verdicts("effect_bits" if exact else "effect_logit_diff", pd.DataFrame(), pd.DataFrame())
    frames, attr_frames = [], []
    stats: dict[str, dict[str, np.ndarray]] = {}
    for c in conditions(cfg.directions, pairs.null is not None):
        stats[c.key] = cell_table(got[c.key], cfg.n_resamples, cfg.seed)
    kinds = base["group"].to_numpy()
    for d in cfg.directions:
        key = {p: Condition(m, p, d).key for m, p in
               (("trained", "evidence"), ("trained", "bayes_null"),
                ("trained", "unrelated_source"))}
        tkey = Condition("random_init", "evidence", d).key
        ev, ctl, tw = got[key["evidence"]], got[key["unrelated_source"]], got[tkey]
        v.unrelated_rows = ctl.pairs
        tests = paired_tests(ev, ctl)
        null = stats.get(key["bayes_null"])
        surv = _survival(stats[key["evidence"]], tests.p_holm, null, stats[tkey], exact)
        v.tests.append(TestFamily(d, tests.n_tests, tests.n_effective, int(surv.sum())))
        v.evidence_scale[d] = float(ev.kl_target.mean()) if exact else float("nan")
        if null is not None:
            v.null_max[d] = _nanmax(null["abs_effect"])
            nm = got[key["bayes_null"]]
            v.null_own[d] = float(np.abs(nm.kl_target - nm.kl_source_run).mean())
        v.twin_best_rf[d] = _nanmax(stats[tkey]["recovered_fraction"])
        extra = {"p": tests.p, "p_holm": tests.p_holm, "survives": surv,
                 "null_abs_effect": null["abs_effect"] if null else np.full(len(cells), np.nan),
                 "twin_recovered_fraction_high": stats[tkey]["recovered_fraction_high"],
                 "attribution_effect": attribution[d].mean(1) if d in attribution
                 else np.full(len(cells), np.nan)}
        stats[key["evidence"]] = {**stats[key["evidence"]], **extra}
        for kind in dict.fromkeys(kinds):
            idx = np.flatnonzero(kinds == kind)
            v.kinds.append(_kind_verdict(cfg, pairs, cells, kind, d, idx, ev, ctl, tw,
                                         stats[key["evidence"]], stats[key["unrelated_source"]],
                                         stats[tkey], null, surv))
            if d in attribution:
                v.agreement.append(_agreement(cells, kind, d, idx, ev.effect.mean(1),
                                              attribution[d].mean(1)))
        if d in attribution:
            v.agreement.append(_agreement(cells, "all cells", d, np.arange(len(cells)),
                                          ev.effect.mean(1), attribution[d].mean(1)))
            attr_frames.append(base.assign(direction=d, exact_effect=ev.effect.mean(1),
                                           attribution_effect=attribution[d].mean(1)))
    for c in conditions(cfg.directions, pairs.null is not None):
        frames.append(base.assign(condition=c.key, model=c.model, pairs=c.pairs,
                                  direction=c.direction, **stats[c.key]))
    v.table = pd.concat(frames, ignore_index=True)
    v.table = v.table.rename(columns={"effect": v.metric, "abs_effect": "abs_" + v.metric,
                                      "attribution_effect": "attribution_" + v.metric})
    if attr_frames:
        a = pd.concat(attr_frames, ignore_index=True)
        a["abs_difference"] = (a["exact_effect"] - a["attribution_effect"]).abs()
        v.attribution_table = a
    return v


def _kind_verdict(cfg: PatchConfig, pairs: Pairs, cells: list[interp.PatchCell], kind: str,
                  d: str, idx: np.ndarray, ev: Measured, ctl: Measured, tw: Measured,
                  s_ev: dict[str, np.ndarray], s_ctl: dict[str, np.ndarray],
                  s_tw: dict[str, np.ndarray], null: dict[str, np.ndarray] | None,
                  surv: np.ndarray) -> KindVerdict:
    best = int(idx[np.nanargmax(s_ev["effect"][idx])])
    all_rows = np.arange(len(pairs.evidence))
    h_ev = _held(ev, idx, pairs, cfg, all_rows)
    h_ctl = _held(ctl, idx, pairs, cfg, ctl.pairs)
    h_tw = _held(tw, idx, pairs, cfg, all_rows)
    pick = h_ev.pick if h_ev.pick >= 0 else best
    verdict = None if cfg.quick else bool(
        surv[pick] and h_ev.effect > max(h_ctl.effect, 0.0))
    return KindVerdict(
        kind=kind, direction=d, n_cells=int(idx.size), n_surviving=int(surv[idx].sum()),
        best=cells[best].label, best_effect=float(s_ev["effect"][best]),
        best_effect_low=float(s_ev["effect_low"][best]),
        best_effect_high=float(s_ev["effect_high"][best]),
        best_recovered_fraction=float(s_ev["recovered_fraction"][best]),
        best_p_holm=float(s_ev["p_holm"][best]),
        held_out_effect=h_ev.effect, held_out_recovered_fraction=h_ev.recovered_fraction,
        held_out_pick=cells[pick].label, pick_share=h_ev.pick_share,
        pick_survives=bool(surv[pick]), control_held_out_effect=h_ctl.effect,
        control_best_effect=_nanmax(s_ctl["effect"][idx]),
        twin_held_out_effect=h_tw.effect,
        twin_best_recovered_fraction=_nanmax(s_tw["recovered_fraction"][idx]),
        null_abs_effect=float(null["abs_effect"][pick]) if null is not None else float("nan"),
        survives=verdict)


def _agreement(cells: list[interp.PatchCell], kind: str, d: str, idx: np.ndarray,
               exact: np.ndarray, approx: np.ndarray) -> Agreement:
    r = rank_agreement(exact, approx, idx)
    worst = [f"{cells[i].label}: exact {exact[i]:.3g}, attribution {approx[i]:.3g}"
             for i in r.worst]
    return Agreement(kind, d, r.n, r.rho, worst)


def build_tables(v: Verdicts) -> dict[str, pd.DataFrame]:
    """The run's tables: ``table.parquet`` (one row per cell × condition) and, with
    attribution, ``attribution.parquet`` (one row per cell × direction)."""
    out = {"table.parquet": v.table}
    if len(v.attribution_table):
        out["attribution.parquet"] = v.attribution_table
    return out
