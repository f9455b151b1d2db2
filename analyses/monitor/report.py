"""Verdict table, terminal table and HTML report of ``bayesgeom monitor``
(:mod:`analyses.monitor.run`): the checklist with pass / fail / not-measurable colouring, every
threshold, the controls and the folders of the sub-runs whose own reports hold the detail.

:func:`findings` reads each check as a claim: it survives when it passes its threshold *and*
beats its controls (``beats_control``: a pass that does not beat them is no evidence of a
trained property); it does not when it fails either; a check without a control survives on its
threshold alone, and one that cannot be measured has no verdict.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pandas as pd
import plotly.graph_objects as go

from ..kit.findings import Finding, findings_text
from ..kit.html import html_report
from ..kit.numbers import cell, sig
from .result import FAIL, NOT_MEASURABLE, PASS, CheckRow, MonitorResult

#: cell colour per status
FILL = {PASS: "#d4edda", FAIL: "#f8d7da", NOT_MEASURABLE: "#e2e3e5"}


#: a number as the table shows it: integers with separators, small values to 4 s.f.
fmt = cell


def rule(r: CheckRow) -> str:
    """``"> 0.9"``: the pass rule of a row."""
    return f"{r.direction} {fmt(r.threshold)}"


def beats(r: CheckRow) -> str:
    """``"yes"`` / ``"no"`` / ``"—"``: whether the value is on the passing side of both
    controls."""
    return "—" if r.beats_control is None else ("yes" if r.beats_control else "no")


def _controls(r: CheckRow) -> str:
    parts = [f"{label} {sig(v)}" if v == v else label
             for label, v in ((r.control_label, r.control), (r.reference_label, r.reference))
             if label]
    return "; ".join(parts)


def finding(r: CheckRow) -> Finding:
    """One check as a verdict row (module doc)."""
    claim = f"{r.check} {rule(r)} ({r.unit})"
    if not r.measured:
        return Finding(claim, None, control=_controls(r),
                       undefined=r.note.removeprefix("not measurable: "))
    passed = r.status == PASS
    survives = passed and r.beats_control is not False
    if r.beats_control is None:
        why = f"{r.status} on the threshold; no finite control to beat"
    elif passed and not r.beats_control:
        why = "passes the threshold but does not beat its controls: no evidence of a trained " \
              "property"
    else:
        why = f"{r.status} on the threshold; {'beats' if r.beats_control else 'does not beat'}" \
              " both controls"
    note = f"; {r.note}" if r.note else ""
    if r.value != r.value:
        return Finding(claim, None, control=_controls(r), survives=False, evidence=why,
                       undefined=r.note or "no finite value")
    return Finding(claim, r.value, control=_controls(r), survives=survives, evidence=why + note)


def findings(res: MonitorResult) -> list[Finding]:
    """Every check as a verdict row, in the checklist's order."""
    return [finding(r) for r in res.rows]


def format_summary(res: MonitorResult) -> str:
    """The verdict table (:func:`findings`), then the checklist: value, rule, status, control;
    every threshold and each row's note."""
    return findings_text(findings(res)) + "\n\n" + checklist_text(res)


def checklist_text(res: MonitorResult) -> str:
    """The checklist (value, rule, status, control), every threshold and each row's note."""
    c = res.counts()
    lines = [f"{res.model} ({res.kind}): {c[PASS]} pass, {c[FAIL]} fail, "
             f"{c[NOT_MEASURABLE]} not measurable",
             f"{'check':<27} {'value':>9} {'rule':>9} {'status':<15} {'control':>9} "
             f"{'reference':>9}  beats both"]
    for r in res.rows:
        lines.append(f"{r.check:<27} {fmt(r.value):>9} {rule(r):>9} {r.status:<15} "
                     f"{fmt(r.control):>9} {fmt(r.reference):>9}  {beats(r)}")
    lines.append("thresholds: " + ", ".join(f"--{k.replace('_', '-')} {v:g}"
                                            for k, v in res.thresholds.items()))
    for r in res.rows:
        extra = "; ".join(x for x in (r.note, f"control: {r.control_label}"
                                      if r.control_label else "",
                                      f"reference: {r.reference_label}"
                                      if r.reference_label else "") if x)
        lines.append(f"  {r.check}: {extra}")
    return "\n".join(lines)


def checklist_figure(res: MonitorResult) -> go.Figure:
    """The checklist as a table whose status column is coloured by outcome."""
    cols = {"check": [r.check for r in res.rows],
            "value": [fmt(r.value) for r in res.rows],
            "rule": [rule(r) for r in res.rows],
            "status": [r.status for r in res.rows],
            "control": [fmt(r.control) for r in res.rows],
            "reference": [fmt(r.reference) for r in res.rows],
            "beats both": [beats(r) for r in res.rows],
            "controls are": [" / ".join(x for x in (r.control_label, r.reference_label) if x)
                             or "—" for r in res.rows],
            "note": [r.note or "—" for r in res.rows]}
    fills = [FILL[r.status] for r in res.rows]
    white = ["white"] * len(res.rows)
    fig = go.Figure(go.Table(
        columnwidth=[150, 70, 70, 100, 70, 70, 60, 250, 280],
        header={"values": [f"<b>{k}</b>" for k in cols], "align": "left",
                "fill_color": "#f0f0f0"},
        cells={"values": list(cols.values()), "align": "left", "height": 40,
               "fill_color": [white, fills, white, fills, *[white] * 5]}))
    fig.update_layout(height=140 + 60 * len(res.rows), width=1100,
                      margin={"t": 10, "b": 10, "l": 10, "r": 10})
    return fig


def definitions(res: MonitorResult) -> pd.DataFrame:
    """check, unit, definition and the folder each number comes from."""
    return pd.DataFrame({"check": [r.check for r in res.rows],
                         "unit": [r.unit for r in res.rows],
                         "definition": [r.definition for r in res.rows],
                         "source (sub-run folder: its report.html)": [r.source or "—"
                                                                      for r in res.rows]})


def write_report(path: Path, res: MonitorResult, manifest: dict[str, Any]) -> Path:
    c = res.counts()
    return html_report(path, f"Monitoring checklist — {res.model}", findings(res), [
        ("The model", f"{res.model} ({res.kind}): {c[PASS]} pass, {c[FAIL]} fail, "
                      f"{c[NOT_MEASURABLE]} not measurable. Each check's number comes from a "
                      "sub-run (detect, verify, geometry, a training log, an extrapolate run) "
                      "whose own report.html holds the detail (see Definitions and sources). "
                      "Thresholds: " + ", ".join(f"--{k.replace('_', '-')} {v:g}"
                                                 for k, v in res.thresholds.items()) + "."),
        ("Checklist (green pass, red fail, grey not measurable)", checklist_figure(res),
         "Look for: green status cells whose 'beats both' is yes -- a pass that does not beat "
         "its controls (the random-init twin, chance) is no evidence of a trained property; "
         "grey rows say why they could not be measured."),
        ("Definitions and sources", definitions(res)),
        ("Thresholds", pd.DataFrame({"option": [f"--{k.replace('_', '-')}" for k in
                                                res.thresholds],
                                     "value": list(res.thresholds.values())})),
    ], manifest)
