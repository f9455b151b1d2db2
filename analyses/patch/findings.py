"""What a patching run found (:mod:`analyses.patch.run`): the verdict table its report and
summary open with, behind a wind tunnel's learned gate.

Rows: per site kind in the primary direction (denoising, else the first run), whether it
carries the evidence beyond its controls (:mod:`analyses.patch.verdicts`); the other direction's
kinds in one row each; the Bayes-null control (every cell's mean |effect| on pairs whose exact
posteriors are identical, against a tolerance of the evidence scale); the twin; attribution's
rank agreement with exact patching (descriptive: no criterion).
"""

from __future__ import annotations

import math

from ..kit.findings import Finding
from ..kit.learned import gate
from ..kit.numbers import pct, sig
from .result import KindVerdict, PatchingResult

#: the direction whose kinds get a row each
PRIMARY = "denoising"

WHAT = {"denoising": "restores the clean input's posterior when patched into the corrupt run",
        "noising": "moves the clean run to the corrupt input's posterior when patched in from it"}


FREE = {"denoising": "moves the corrupt run's logit difference toward the clean run's",
        "noising": "moves the clean run's logit difference toward the corrupt run's"}


def _unit(r: PatchingResult) -> str:
    return "bits" if r.metric == "effect_bits" else "logits"


def _kind_row(r: PatchingResult, k: KindVerdict) -> Finding:
    unit = _unit(r)
    control = (f"best of the same {k.n_cells} cells patched from an unrelated sequence, held "
               f"out: {sig(k.control_held_out_effect)} {unit} (in sample "
               f"{sig(k.control_best_effect)}); random-init twin held out "
               f"{sig(k.twin_held_out_effect)} {unit}")
    if math.isfinite(k.null_abs_effect):
        control += f"; Bayes-null pairs at that cell |effect| {sig(k.null_abs_effect)} {unit}"
    evidence = [f"cell chosen most often on half the pairs: {k.held_out_pick} "
                f"({pct(k.pick_share)} of choices; it "
                f"{'survives' if k.pick_survives else 'does not survive'} its per-cell "
                "controls)",
                f"in-sample best {k.best}: {sig(k.best_effect)} {unit} "
                f"[{sig(k.best_effect_low)}, {sig(k.best_effect_high)}], p (Holm) "
                f"{sig(k.best_p_holm)}"]
    if r.metric == "effect_bits":
        evidence.append(f"recovered fraction held out {sig(k.held_out_recovered_fraction)}, "
                        f"in sample {sig(k.best_recovered_fraction)}; twin's best "
                        f"{sig(k.twin_best_recovered_fraction)}")
    evidence.append(f"{k.n_surviving} of {k.n_cells} cells survive every per-cell control")
    if r.quick:
        evidence.insert(0, "quick run: not a result")
    toward = ("the source's exact posterior" if r.metric == "effect_bits"
              else "the source run's logit difference")
    what = WHAT[k.direction] if r.metric == "effect_bits" else FREE[k.direction]
    return Finding(
        f"{k.kind} ({k.direction}): the best cell {what} (effect toward {toward}, chosen on "
        "half the pairs and scored on the other)",
        k.held_out_effect, control=control, survives=k.survives,
        evidence="; ".join(evidence), unit=unit,
        undefined="no pair left in a held-out half")


def _null_row(r: PatchingResult) -> Finding | None:
    if not r.null_max_abs_effect:
        return None
    d = PRIMARY if PRIMARY in r.null_max_abs_effect else next(iter(r.null_max_abs_effect))
    worst, scale = r.null_max_abs_effect[d], r.evidence_scale.get(d, math.nan)
    tol = r.null_tolerance * scale
    ok = None if r.quick or not math.isfinite(tol) else bool(worst <= tol)
    others = "; ".join(f"{k}: {sig(v)} bits" for k, v in r.null_max_abs_effect.items())
    return Finding(
        "Bayes-null pairs (an edit the exact posterior ignores) patch to ~0 bits at every cell "
        f"({d}; largest mean |effect| of any cell)", worst,
        control=f"{pct(r.null_tolerance)} of the evidence pairs' KL(p*_source ‖ q_target), "
                f"{sig(scale)} bits: {sig(tol)} bits",
        survives=ok, unit="bits",
        evidence=f"{r.n_pairs.get('bayes_null', 0)} null pairs; by direction {others}; the "
                 "unpatched model's own response to the null edit, mean |KL(p*‖q_corrupt) − "
                 f"KL(p*‖q_clean)|, {sig(r.null_own_response.get(d, math.nan))} bits (a model "
                 "that reads the edit the posterior ignores moves by patching, whatever the "
                 "cell); a cell above the tolerance measures off-distribution damage or that "
                 "sensitivity, and a cell's evidence effect must exceed it to survive",
        undefined="no null pair was patched")


def _twin_row(r: PatchingResult) -> Finding | None:
    if r.metric != "effect_bits":
        return None
    d = PRIMARY if PRIMARY in r.twin_best_recovered_fraction else r.directions[0]
    twin = r.twin_best_recovered_fraction[d]
    trained = max((k.best_recovered_fraction for k in r.kinds if k.direction == d),
                  default=math.nan)
    ok = None if r.quick or not math.isfinite(twin) else bool(trained > twin)
    return Finding(
        f"the random-init twin recovers less at its best cell ({d}; recovered fraction, same "
        "pairs, same grid)", twin, control=f"the trained model's best cell: {sig(trained)}",
        survives=ok, evidence="the trained weights, not the architecture and the residual "
                              "stream's plumbing, carry what the trained model's cells recover",
        undefined="the twin's recovered fraction is undefined")


def _attribution_rows(r: PatchingResult) -> list[Finding]:
    rows = []
    for d in r.directions:
        agree = [a for a in r.attribution if a.direction == d and a.kind != "all cells"]
        overall = [a for a in r.attribution if a.direction == d and a.kind == "all cells"]
        if not agree:
            continue
        per = "; ".join(f"{a.kind} ρ {sig(a.spearman)} over {a.n_cells}"
                        for a in overall + agree)
        worst = min(agree, key=lambda a: a.spearman if math.isfinite(a.spearman) else math.inf)
        rhos = [a.spearman for a in agree if math.isfinite(a.spearman)]
        rows.append(Finding(
            f"attribution patching ranks cells as exact patching does ({d}; Spearman of mean "
            "effects, worst site kind)", min(rhos) if rhos else math.nan,
            control="exact activation patching on the same grid and pairs", survives=None,
            evidence=f"{per}; largest disagreements ({worst.kind}): "
                     + " | ".join(worst.worst[:3]) + "; descriptive, no criterion",
            undefined="fewer than 3 cells of a kind"))
    return rows


def findings(r: PatchingResult) -> list[Finding]:
    """The verdict table of a patching run (module doc)."""
    primary = PRIMARY if PRIMARY in r.directions else r.directions[0]
    rows = [_kind_row(r, k) for k in r.kinds if k.direction == primary]
    for d in r.directions:
        if d == primary:
            continue
        kinds = [k for k in r.kinds if k.direction == d]
        if kinds:
            best = max(kinds, key=lambda k: k.held_out_effect
                       if math.isfinite(k.held_out_effect) else -math.inf)
            rows.append(_kind_row(r, best))
    rows += [f for f in (_null_row(r), _twin_row(r)) if f is not None]
    rows += _attribution_rows(r)
    return gate(rows, r.learned)
