"""Verdict table, figures, table and terminal view of ``bayesgeom extrapolate``
(:mod:`analyses.extrapolate.run`).

:func:`findings` holds each positional scheme's extrapolation ratio against the learned-absolute
scheme (``llama``) of the same run -- it survives when its ratio is larger, the comparison
``bayesgeom monitor`` makes -- and, where BAM was trained, the BAM paper's 500× claim against
BAM's ratio here. A scheme whose accuracy at L is within the run's tolerance of chance has no
verdict: accuracy that stays at chance would count as extrapolating.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pandas as pd
import plotly.graph_objects as go
from plotly.subplots import make_subplots

from ..kit.findings import Finding, findings_text
from ..kit.html import COLORS, html_report
from ..kit.numbers import sig
from .result import ExtrapolateResult, SchemeSummary

#: the learned-absolute scheme every other is held against, and the BAM scheme
CONTROL, BAM = "llama", "llama-bam"
#: the BAM paper's length multiple (arXiv 2505.22842)
BAM_MULTIPLE = 500


def _learned(res: ExtrapolateResult, s: SchemeSummary) -> str:
    """Why ``s`` learned nothing to extrapolate ("" when it did)."""
    if res.chance != res.chance:
        return ""
    if s.accuracy_at_1 <= res.chance + res.tolerance:
        return (f"accuracy at L {sig(s.accuracy_at_1)} is within the tolerance {res.tolerance:g} "
                f"of chance {sig(res.chance)}: the scheme did not learn the task at L, so a "
                "flat curve is no extrapolation")
    return ""


def findings(res: ExtrapolateResult) -> list[Finding]:
    """The verdict rows (module doc): one per scheme but the control, then the BAM claim."""
    by = {s.arch: s for s in res.schemes}
    ctl = by.get(CONTROL)
    top = max(res.multiples)
    rule = (f"ratio = the largest m whose accuracy, and every smaller multiple's, stays within "
            f"{res.tolerance:g} of the accuracy at L")
    out = []
    for s in res.schemes:
        if s.arch == CONTROL:
            continue
        nope = _learned(res, s) or (f"the control: llama's {_learned(res, ctl)}"
                                    if ctl is not None and _learned(res, ctl) else "")
        control = (f"learned absolute positions (llama) {ctl.ratio}× L" if ctl is not None
                   else "no learned-absolute (llama) scheme in this run")
        survives = None if nope or ctl is None else s.ratio > ctl.ratio
        out.append(Finding(
            f"{s.arch} extrapolates beyond the training length L = {res.length} ({rule})",
            s.ratio, unit="× L", control=control, survives=survives,
            evidence=nope or (f"accuracy {sig(s.accuracy_at_1)} at L, "
                              f"{sig(s.accuracy_at_max)} at {top}× L (chance "
                              f"{sig(res.chance)}); criterion: a larger ratio than the "
                              "learned-absolute scheme (monitor's control)"
                              if ctl is not None else "no control to compare with")))
    bam = by.get(BAM)
    if bam is not None:
        short = top < BAM_MULTIPLE
        nope = _learned(res, bam)
        out.append(Finding(
            f"the BAM paper's claim: accurate retrieval at {BAM_MULTIPLE}× the training length "
            "(Bianchessi et al.; passkey retrieval in pretrained LMs, here long_recall)",
            bam.ratio, unit="× L", control=f"the paper's {BAM_MULTIPLE}× L",
            survives=None if short or nope else bam.ratio >= BAM_MULTIPLE,
            evidence=(f"measured only up to {top}× L: the claim is not reached" if short
                      else nope or f"BAM's accuracy {sig(bam.accuracy_at_max)} at {top}× L; "
                      f"criterion: ratio ≥ {BAM_MULTIPLE}")))
    return out


def curves_figure(table: pd.DataFrame) -> go.Figure:
    """Accuracy and KL against the length multiple, one line per scheme; the Bayes accuracy
    and chance dashed."""
    fig = make_subplots(rows=1, cols=2, subplot_titles=["accuracy", "KL(p_Bayes ‖ p_model), bits"])
    for i, (arch, g) in enumerate(table.groupby("arch", sort=False)):
        c = COLORS[i % len(COLORS)]
        fig.add_trace(go.Scatter(x=g["multiple"], y=g["accuracy"], name=str(arch),
                                 mode="lines+markers", line={"color": c}, legendgroup=str(arch)),
                      row=1, col=1)
        fig.add_trace(go.Scatter(x=g["multiple"], y=g["kl_bits"], name=str(arch),
                                 mode="lines+markers", line={"color": c}, showlegend=False,
                                 legendgroup=str(arch)), row=1, col=2)
    ref = table.groupby("multiple", sort=True)[["bayes_accuracy", "chance"]].mean()
    for col, dash, name in (("bayes_accuracy", "dash", "exact-posterior ceiling"),
                            ("chance", "dot", "chance")):
        fig.add_trace(go.Scatter(x=ref.index, y=ref[col], name=name,
                                 mode="lines", line={"color": "#777", "dash": dash}),
                      row=1, col=1)
    for col in (1, 2):
        fig.update_xaxes(type="log", title_text="evaluation length / training length",
                         row=1, col=col)
    fig.update_yaxes(type="log", row=1, col=2)
    fig.update_layout(height=420, width=1050, margin={"t": 50})
    return fig


def wide_table(table: pd.DataFrame) -> pd.DataFrame:
    """Scheme × multiple accuracy, with the Bayes accuracy row."""
    w = table.pivot(index="arch", columns="multiple", values="accuracy")
    bayes = table.groupby("multiple")["bayes_accuracy"].mean().rename("Bayes (ceiling)")
    w = pd.concat([w, bayes.to_frame().T])
    w.columns = [f"×{m}" for m in w.columns]
    return w.reset_index(names="scheme")


def format_summary(res: ExtrapolateResult) -> str:
    """The verdict table (:func:`findings`), then the per-scheme view (:func:`details_text`)."""
    return findings_text(findings(res)) + "\n\n" + details_text(res)


def details_text(res: ExtrapolateResult) -> str:
    """Accuracy at L and at the longest length, and the ratio, per scheme."""
    lines = [f"long_recall, trained at L = {res.length} (noise {res.noise}), {res.preset}, "
             f"{res.steps} steps; {res.n_eval} held-out sequences per cell",
             f"extrapolation ratio: largest m with accuracy within {res.tolerance} of m = 1",
             f"{'scheme':<16} {'acc ×1':>7} {'acc ×' + str(max(res.multiples)):>9} "
             f"{'ratio':>6}"]
    for s in res.schemes:
        lines.append(f"{s.arch:<16} {s.accuracy_at_1:>7.3f} {s.accuracy_at_max:>9.3f} "
                     f"{s.ratio:>6}")
    lines.append(f"claim beside it: {res.bam_claim}")
    return "\n".join(lines)


def write_report(path: Path, res: ExtrapolateResult, table: pd.DataFrame,
                 manifest: dict[str, Any]) -> Path:
    return html_report(path, "Length extrapolation by positional scheme", findings(res), [
        ("The run", f"long_recall trained at L = {res.length} tokens (noise {res.noise}), "
                    f"{res.preset} preset, {res.steps} steps per scheme; {res.n_eval} held-out "
                    f"sequences per cell at {', '.join(f'{m}×' for m in res.multiples)} L. "
                    f"Extrapolation ratio: the largest m whose accuracy, and every smaller "
                    f"multiple's, stays within {res.tolerance:g} of the accuracy at L. Beside "
                    f"it: {res.bam_claim}."),
        ("Accuracy and calibration against length, with the Bayes ceiling and chance",
         curves_figure(table),
         "Look for: how far right each scheme's accuracy (left) stays flat before falling "
         "towards the dotted chance line, against learned absolute positions (llama); the "
         "dashed line is the exact posterior's accuracy. On the right, KL (log scale) rising "
         "marks where calibration breaks."),
        ("Accuracy (scheme × length multiple)", wide_table(table)),
        ("Every cell", table),
    ], manifest)
