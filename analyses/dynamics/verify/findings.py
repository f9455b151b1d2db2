"""The verdict table of ``bayesgeom dynamics verify`` (:mod:`analyses.dynamics.verify.run`):
the advantage routing law and the value update, each held against a deliberately wrong law,
every independent identity against the tolerance, and the value step's first-order check."""

from __future__ import annotations

import numpy as np

from ...kit.findings import Finding
from ...kit.numbers import sig
from .result import CONTROLS, DynamicsVerifyResult


def _law_finding(res: DynamicsVerifyResult, identity: str, control: str, claim: str) -> Finding:
    """One identity held against its deliberately wrong law and the tolerance."""
    by = {c.identity: c for c in res.checks}
    c, wrong = by[identity], by[control]
    power = ("above" if wrong.max_error > res.tolerance else "NOT above")
    evidence = (f"passes iff max error ≤ tolerance {res.tolerance:g}; worst at layer "
                f"{c.worst_layer}, head {c.worst_head}; the wrong law's error is {power} the "
                "tolerance" + ("" if wrong.max_error > res.tolerance
                               else ", so the check has no power here"))
    rows = by["score_rows_sum_zero"]
    if identity == "routing_law" and not c.passed and c.max_error <= 2 * rows.max_error:
        evidence += (f"; autograd's own ∂L/∂s rows miss zero by {sig(rows.max_error)}: the "
                     "reference, not the law, sets this error")
    heads = res.n_heads if c.per == "query head" else res.n_kv_heads
    return Finding(f"{claim} (Paper II §2.2 item {c.spec_item}: {c.formula}; max relative "
                   f"error over {len(res.layers)} layers × {heads} {c.per}s)", c.max_error,
                   control=f"wrong law {CONTROLS[control][0]}: error {sig(wrong.max_error)}",
                   survives=c.passed, evidence=evidence,
                   undefined="a head's autograd gradient is all zero (0 / 0)")


def findings(res: DynamicsVerifyResult) -> list[Finding]:
    """The verdict table: the advantage routing law and the responsibility-weighted value
    update, each against its deliberately wrong law; all independent identities; the value
    step's first-order check (identity 5, which has no pass/fail criterion in the run)."""
    out = [
        _law_finding(res, "routing_law", "routing_law_without_baseline",
                     "score gradient follows the advantage routing law"),
        _law_finding(res, "value_grad", "value_grad_without_responsibilities",
                     "value gradient is the responsibility-weighted upstream error"),
    ]
    failed = [c.identity for c in res.checks
              if not c.control and c.corollary_of is None and not c.passed]
    worst = max((c.max_error for c in res.checks if not c.control), default=float("nan"))
    out.append(Finding(
        f"every independent §2.2 identity holds in every checked head ({res.dtype}, "
        f"{res.loss_kind} loss; feedback, item 6, is a corollary of item 3 and not counted)",
        res.independent_passed, control=f"tolerance {res.tolerance:g} on each identity's max "
        f"relative error", survives=res.all_passed, unit=f"of {res.independent_checked} pass",
        evidence=f"largest error of any identity {sig(worst)}"
        + (f"; failing: {', '.join(failed)}" if failed else "")))
    if res.value_step:
        eps = min(res.value_step, key=float)
        gap = res.value_step[eps]
        trend = ", ".join(f"ε={e}: {sig(g)}" for e, g in res.value_step.items())
        out.append(Finding(
            f"a value-only step changes the loss by its first-order prediction (§2.2 item 5; "
            f"|1 − ratio| at the smallest step, ε = {eps})", gap,
            control="should shrink towards 0 as ε → 0", survives=None,
            evidence=f"the run sets no threshold for item 5; by ε: {trend}",
            undefined="" if np.isfinite(gap) else "the value gradient is zero"))
    return out
