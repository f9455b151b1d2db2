"""The learned-first gate: no verdict about a wind tunnel that has not learned its task.

:func:`learned_of` reads a wind tunnel's :class:`windtunnel.learned.LearnedCheck` (its held-out
entropy MAE beside chance and, on the HMM, the history-free filter; None for any other model);
the run stores it in its result, and :func:`gate` puts it at the top of the verdict table: a
first row saying whether the tunnel learned, and, when it did not, every other verdict
withheld with the reason. ``compare``, ``geometry``, ``steer``, ``verify`` and ``detect`` call
it; a new experiment on wind tunnels does the same.

Example:
    >>> from bayesgeom.windtunnel.learned import LearnedCheck
    >>> from bayesgeom.analyses.kit.findings import Finding
    >>> c = LearnedCheck("hmm", 0.331, 2000, "the run's final evaluation",
    ...                  "history-free filter", 0.0797, {"history-free filter": 0.0797})
    >>> rows = gate([Finding("keys orthogonal", 0.9, survives=False)], c)
    >>> [(r.claim[:30], r.verdict_text()) for r in rows]
    [('the wind tunnel has learned it', 'does not survive'), ('keys orthogonal', 'no verdict')]
    >>> rows[1].evidence
    'withheld: the tunnel has not learned its task (first row)'
"""

from __future__ import annotations

from dataclasses import replace
from typing import TYPE_CHECKING

from ...windtunnel.learned import MARGIN, LearnedCheck, check_learned
from .findings import Finding

if TYPE_CHECKING:
    from ... import interp

#: the evidence of a withheld verdict
WITHHELD = "withheld: the tunnel has not learned its task (first row)"


def learned_of(model: interp.InterpModel, progress: bool = False) -> LearnedCheck | None:
    """The learned check of a wind tunnel opened by :func:`kit.models.open_model` (its run's
    final evaluation, or an evaluation now: :func:`windtunnel.learned.check_learned`); None for
    any other model (a Hugging Face LM has no exact posterior to be held against)."""
    if model.info.source != "windtunnel" or model.task is None:
        return None
    return check_learned(model.info.name, model.hf, model.task, progress=progress)


def learned_row(check: LearnedCheck, who: str = "") -> Finding:
    """The verdict row of the check itself."""
    others = "; ".join(f"{k} {v:.3g} bits" for k, v in check.controls.items())
    return Finding(
        f"{who}the wind tunnel has learned its task (Paper I per-sample entropy MAE at most "
        f"{MARGIN:g}× its context-blind baseline's, on the same held-out sequences)",
        check.mae_bits, control=others, survives=check.learned, unit="bits",
        evidence=f"{check.source}, {check.n_sequences:,} sequences; threshold "
                 f"{MARGIN * check.baseline_bits:.3g} bits ({check.baseline})")


def gate(rows: list[Finding], check: LearnedCheck | None, who: str = "") -> list[Finding]:
    """``rows`` behind the learned check: unchanged for a model that is not a wind tunnel;
    for a tunnel, :func:`learned_row` first and, when it has not learned, every verdict of
    ``rows`` withheld (``survives`` None, the reason as evidence). ``who``: a prefix naming
    the model where a table holds several (``"hmm: "``)."""
    if check is None:
        return rows
    if check.learned:
        return [learned_row(check, who), *rows]
    return [learned_row(check, who), *(replace(r, survives=None, evidence=WITHHELD)
                                       for r in rows)]
