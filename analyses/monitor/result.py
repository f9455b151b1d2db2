"""The typed result of ``bayesgeom monitor`` (:mod:`analyses.monitor.run`): the checklist, one
:class:`CheckRow` per check, as ``summary.json`` holds it (how each row is built from what the
run reads is :mod:`analyses.monitor.checks`).

A row's ``status`` is ``"pass"``, ``"fail"`` or ``"not measurable"``; :func:`judge` decides
the first two from the measured value, the threshold and the row's direction (``">"``: the
value must exceed the threshold, ``"<"``: stay below it, ``"<="``: not exceed it). A row that
cannot be measured carries NaN and says why in ``note``; a measured row may carry a note too
(which layer, which aggregate, why a step count is missing).

Example:
    >>> judge(0.93, ">", 0.9), judge(0.93, ">", 0.95), judge(1500.0, "<=", 2000.0)
    ('pass', 'fail', 'pass')
"""

from __future__ import annotations

import math
from dataclasses import asdict, dataclass, field
from typing import Any

import pandas as pd

PASS, FAIL, NOT_MEASURABLE = "pass", "fail", "not measurable"
DIRECTIONS = (">", "<", "<=")


def judge(value: float, direction: str, threshold: float) -> str:
    """``"pass"`` when ``value`` satisfies ``direction threshold``, else ``"fail"`` (a NaN
    value fails: the caller marks an unmeasurable row itself)."""
    if direction not in DIRECTIONS:
        raise ValueError(f"direction must be one of {DIRECTIONS}, got {direction!r}")
    if not math.isfinite(value):
        return FAIL
    ok = {">": value > threshold, "<": value < threshold, "<=": value <= threshold}[direction]
    return PASS if ok else FAIL


@dataclass
class CheckRow:
    """One check of the checklist.

    ``value``: the measured number (NaN when not measurable, or when a measured quantity has
    no finite value, e.g. a level never reached -- ``note`` says which); ``threshold`` and
    ``direction``: the pass rule, printed beside it; ``control``: the control's number on the
    same scale (NaN when the check has none) and ``control_label`` what it is, with any
    further reference numbers; ``reference`` / ``reference_label``: a second control (chance,
    random subspaces, the uniform distribution, a baseline predictor); ``source``: the sub-run
    folder the number comes from; ``beats_control``: the value is on the passing side of both
    controls (a pass that does not beat them is no evidence of a trained property)."""

    check: str
    definition: str
    unit: str
    value: float
    direction: str
    threshold: float
    status: str
    control: float = math.nan
    control_label: str = ""
    reference: float = math.nan
    reference_label: str = ""
    beats_control: bool | None = None
    note: str = ""
    source: str = ""

    @property
    def measured(self) -> bool:
        return self.status != NOT_MEASURABLE


def measured_row(check: str, definition: str, unit: str, value: float, direction: str,
                 threshold: float, **kw: Any) -> CheckRow:
    """A measured row, judged by :func:`judge`; ``beats_control``: whether the value is on the
    passing side of its control (None without a finite control)."""
    row = CheckRow(check, definition, unit, float(value), direction, float(threshold),
                   judge(float(value), direction, float(threshold)), **kw)
    controls = [c for c in (row.control, row.reference) if math.isfinite(c)]
    if controls and math.isfinite(row.value):
        row.beats_control = all(row.value > c if direction == ">" else row.value < c
                                for c in controls)
    return row


def unmeasurable_row(check: str, definition: str, unit: str, direction: str, threshold: float,
                     why: str, **kw: Any) -> CheckRow:
    """A row that cannot be measured on this model, saying why."""
    return CheckRow(check, definition, unit, math.nan, direction, float(threshold),
                    NOT_MEASURABLE, note=f"not measurable: {why}", **kw)


@dataclass
class MonitorResult:
    """What ``summary.json`` holds: the model, its kind (``"wind tunnel"`` or ``"language
    model"``), the checklist rows in order and the thresholds they were judged against."""

    model: str
    kind: str
    rows: list[CheckRow]
    thresholds: dict[str, float] = field(default_factory=dict)
    wall_s: float = 0.0

    def table(self) -> pd.DataFrame:
        """One row per check (the columns of :class:`CheckRow`) plus ``model``."""
        return pd.DataFrame([asdict(r) for r in self.rows]).assign(model=self.model)

    def counts(self) -> dict[str, int]:
        """How many rows pass, fail and are not measurable."""
        return {s: sum(r.status == s for r in self.rows) for s in (PASS, FAIL, NOT_MEASURABLE)}
