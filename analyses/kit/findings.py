"""What a run found, one claim a row: the verdict table every report and summary opens with.

A :class:`Finding` names a claim (with the definition it follows), its number, the control it
is held against (with the control's number), whether it survives that control, and the
evidence (an adjusted p, a gap over the twin). A number that is undefined carries its reason,
so a reader never meets a bare NaN.

Example:
    >>> f = Finding("keys orthogonal (Paper I: 1 − mean |cos|)", 0.912,
    ...             control="random-init twin 0.430", survives=True,
    ...             evidence="gap +0.482 over the twin")
    >>> f.value_text(), f.verdict_text()
    ('0.912', 'survives')
    >>> g = Finding("calibration MAE", float("nan"), control="exact posterior", unit="bits",
    ...             undefined="no held-out sequences")
    >>> g.value_text(), g.verdict_text()
    ('undefined: no held-out sequences', 'no verdict')
    >>> print(findings_text([f, g]).splitlines()[0])
    What was found: 1 of 2 claims survives its control; 1 gets no verdict
"""

from __future__ import annotations

import html
import math
from dataclasses import dataclass

from .numbers import sig

#: how a verdict reads, by ``Finding.survives``
VERDICTS = {True: "survives", False: "does not survive", None: "no verdict"}


@dataclass(frozen=True)
class Finding:
    """One row of a verdict table.

    Attributes:
        claim: what is claimed, naming the definition it follows (Paper I vs Paper III,
            per-sample vs curve).
        value: the measured number (``None``/NaN when undefined: then ``undefined`` says why).
        control: the control it is held against, with the control's number.
        survives: ``True`` if the claim survives the control, ``False`` if not, ``None`` when
            no verdict is possible (say why in ``evidence``).
        evidence: the adjusted p, the gap over the twin, or why there is no verdict.
        unit: the value's unit ("bits", "s", ""), printed after it.
        undefined: why ``value`` is undefined; required when it is.
    """

    claim: str
    value: float | None
    control: str = ""
    survives: bool | None = None
    evidence: str = ""
    unit: str = ""
    undefined: str = ""

    def __post_init__(self) -> None:
        if not self.defined and not self.undefined:
            raise ValueError(f"finding {self.claim!r}: an undefined value needs its reason")

    @property
    def defined(self) -> bool:
        try:
            return self.value is not None and math.isfinite(float(self.value))
        except (TypeError, ValueError):
            return False

    def value_text(self) -> str:
        if not self.defined:
            return f"undefined: {self.undefined}"
        return sig(self.value) + (f" {self.unit}" if self.unit else "")

    def verdict_text(self) -> str:
        return VERDICTS[self.survives]


def tally(findings: list[Finding]) -> str:
    """How many claims survive, before the table: ``"2 of 5 claims survive their controls;
    1 does not; 2 get no verdict"``.

    Example:
        >>> tally([Finding("a", 1.0, survives=True), Finding("b", 1.0, survives=None)])
        '1 of 2 claims survives its control; 1 gets no verdict'
    """
    n = len(findings)
    yes = sum(f.survives is True for f in findings)
    no = sum(f.survives is False for f in findings)
    none = n - yes - no
    head = (f"{yes} of {n} claim{'s' * (n != 1)} "
            f"{'survives its control' if yes == 1 else 'survive their controls'}")
    parts = [head]
    if no:
        parts.append(f"{no} {'does' if no == 1 else 'do'} not")
    if none:
        parts.append(f"{none} {'gets' if none == 1 else 'get'} no verdict")
    return "; ".join(parts)


def findings_html(findings: list[Finding]) -> str:
    """The verdict table as an HTML fragment: its heading, :func:`tally` and the table."""
    head = "".join(f"<th>{h}</th>" for h in ("Claim", "Value", "Control", "Verdict",
                                              "Evidence"))
    rows = []
    for f in findings:
        cls = {True: "yes", False: "no", None: "none"}[f.survives]
        cells = [f.claim, f.value_text(), f.control or "—", f.verdict_text(),
                 f.evidence or "—"]
        rows.append("<tr>" + "".join(
            f"<td class='verdict-{cls}'>{html.escape(c)}</td>" if i == 3
            else f"<td>{html.escape(c)}</td>" for i, c in enumerate(cells)) + "</tr>")
    if not rows:
        rows.append("<tr><td colspan='5'>This run tests no claim.</td></tr>")
    count = f"<p class='tally'>{html.escape(tally(findings))}.</p>" if findings else ""
    return ("<h2 id='what-was-found'>What was found</h2>" + count +
            "<div class='table-wrap'><table class='findings'>"
            f"<thead><tr>{head}</tr></thead><tbody>{''.join(rows)}</tbody></table></div>")


def findings_text(findings: list[Finding]) -> str:
    """The verdict table for a terminal: one claim a line."""
    lines = ["What was found" + (f": {tally(findings)}" if findings else "")]
    for f in findings:
        ctl = f"; control: {f.control}" if f.control else ""
        ev = f" ({f.evidence})" if f.evidence else ""
        lines.append(f"  [{f.verdict_text()}] {f.claim}: {f.value_text()}{ctl}{ev}")
    if not findings:
        lines.append("  this run tests no claim")
    return "\n".join(lines)
