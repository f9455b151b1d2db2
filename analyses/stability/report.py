"""Verdict table, figures, table and terminal view of ``bayesgeom stability``
(:mod:`analyses.stability.run`).

:func:`findings` reads the run's own criteria: accuracy holds over the measured lengths when the
decay fit finds no crossing (:mod:`probes.decay_fit`: the measured accuracy never falls half way
from its value at L to chance), with ℓ_c and its bootstrap interval as evidence. Accuracy at L,
attention focus and key orthogonality have no test in the run, so they survive when they are on
the passing side of their controls (chance; the random-init twin and uniform attention; the
twin and random vectors -- the rule ``bayesgeom monitor`` applies).
"""

from __future__ import annotations

import math
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd
import plotly.graph_objects as go
from plotly.subplots import make_subplots

from ...probes.decay_fit import AT_FLOOR, NOT_CROSSED, decay_curve
from ..kit.findings import Finding, findings_text
from ..kit.html import COLORS, html_report
from ..kit.numbers import sig
from .result import LengthSummary, StabilityResult

#: the criterion of a claim the run has no test for
RULE = "criterion: on the passing side of both controls (monitor's rule); no significance test"
#: legend names of the control columns
CONTROL_NAMES = {"bayes": "exact posterior (control)", "chance": "chance / uniform (control)"}

#: table metric -> panel title
PANELS = {"accuracy": "accuracy", "kl_bits": "KL(p_Bayes ‖ p_model), bits",
          "entropy_mae_bits": "entropy MAE, bits",
          "attention_entropy_norm": "query attention entropy / log2 ℓ",
          "key_orthogonality": "key-frame orthogonality, 1 − mean |cos|"}


def _critical(res: StabilityResult) -> Finding:
    c, L = res.critical_length, res.train_length
    claim = (f"accuracy holds up to the longest length, {max(res.lengths)} tokens (no crossing "
             "of half way from its value at L to chance; critical length ℓ_c of the fitted "
             "decay, probes.decay_fit)")
    if c is None:
        return Finding(claim, None, control=f"training length L = {L} tokens",
                       undefined="the decay fit needs three or more lengths")
    control = f"training length L = {L} tokens; chance {sig(c.floor)}"
    evidence = (f"{c.text}; {c.n_boot} bootstrap replicates, {c.n_not_crossed} without a "
                "crossing; criterion: the run's crossing rule")
    if c.status == AT_FLOOR:
        return Finding(claim, None, control=control, survives=False, evidence=evidence,
                       undefined="accuracy is already at chance at the training length")
    if c.status == NOT_CROSSED:
        return Finding(claim, c.lower_bound, unit="tokens (a lower bound: ℓ_c > this)",
                       control=control, survives=True, evidence=evidence)
    return Finding(claim, c.estimate, unit=f"tokens (ℓ_c = {sig((c.estimate or 0) / L)} × L)",
                   control=control, survives=False, evidence=evidence)


def _longest(res: StabilityResult, field: str) -> LengthSummary | None:
    """The longest length at which ``field`` was measured (finite), or None."""
    got = [s for s in res.per_length if math.isfinite(getattr(s, field))]
    return got[-1] if got else None


def findings(res: StabilityResult) -> list[Finding]:
    """The verdict rows (module doc), for the metrics the run measured."""
    out, first = [], res.per_length[0]
    if "accuracy" in res.metrics:
        out.append(_critical(res))
        out.append(Finding(
            f"the model retrieves at its training length, {first.length} tokens (accuracy at "
            "the query over the hypotheses)", first.accuracy,
            control=f"chance {sig(first.chance)}; exact-posterior ceiling "
                    f"{sig(first.bayes_accuracy)}",
            survives=first.accuracy > first.chance,
            evidence=f"gap {first.accuracy - first.chance:+.3g} over chance; criterion: above "
                     "chance; no significance test"))
    why = (f"not measured at any length (above --max-attention-length "
           f"{res.max_attention_length} or too few value tokens)")
    if "attention_entropy" in res.metrics:
        s = _longest(res, "attention_entropy_norm")
        claim = ("the query's attention stays focused at {}the longest measured length (entropy "
                 "÷ log2 ℓ, mean over layers and heads; 1 = uniform)")
        out.append(Finding(claim.format(""), None,
                           control="random-init twin; uniform attention 1",
                           undefined=why) if s is None else Finding(
            claim.format(f"{s.length} tokens, "), s.attention_entropy_norm,
            control=f"random-init twin {sig(s.attention_entropy_norm_random_init)}; uniform "
                    "attention 1",
            survives=(s.attention_entropy_norm < s.attention_entropy_norm_random_init
                      and s.attention_entropy_norm < 1),
            evidence=f"gap {s.attention_entropy_norm - s.attention_entropy_norm_random_init:+.3g}"
                     f" against the twin; {sig(first.attention_entropy_norm)} at L; {RULE}"))
    if "key_orthogonality" in res.metrics:
        s = _longest(res, "key_orthogonality")
        claim = ("keys stay orthogonal at {}the longest measured length (Paper I: 1 − mean "
                 "|cos| of the unit keys; mean over layers and kv heads)")
        out.append(Finding(claim.format(""), None, control="random-init twin; random vectors",
                           undefined=why) if s is None else Finding(
            claim.format(f"{s.length} tokens, "), s.key_orthogonality,
            control=f"random-init twin {sig(s.key_orthogonality_random_init)}; random vectors "
                    f"{sig(s.key_orthogonality_chance)}",
            survives=(s.key_orthogonality > s.key_orthogonality_random_init
                      and s.key_orthogonality > s.key_orthogonality_chance),
            evidence=f"gap {s.key_orthogonality - s.key_orthogonality_random_init:+.3g} over "
                     f"the twin; {sig(first.key_orthogonality)} at L; {RULE}"))
    return out


def _line(x: Any, y: Any, name: str, color: str, dash: str | None = None,
          show: bool = True) -> go.Scatter:
    return go.Scatter(x=x, y=y, name=name, mode="lines" if dash else "lines+markers",
                      line={"color": color, "dash": dash}, legendgroup=name, showlegend=show)


def curves_figure(res: StabilityResult, table: pd.DataFrame) -> go.Figure:
    """One panel per metric against length (log x): the model (per layer for attention and
    keys), its controls dashed, and on accuracy the fitted decay curve and ℓ_c."""
    panels = [k for k in PANELS if k in set(table["metric"])]
    cols = min(3, len(panels))
    rows = math.ceil(len(panels) / cols)
    fig = make_subplots(rows=rows, cols=cols, subplot_titles=[PANELS[k] for k in panels])
    seen: set[str] = set()

    def put(tr: go.Scatter, i: int) -> None:
        tr.showlegend = tr.name not in seen
        seen.add(str(tr.name))
        fig.add_trace(tr, row=i // cols + 1, col=i % cols + 1)

    for i, metric in enumerate(panels):
        g = table[table["metric"] == metric]
        for j, (layer, gl) in enumerate(g.groupby("layer", sort=True)):
            name = "model" if layer < 0 else f"layer {layer}"
            put(_line(gl["length"], gl["value"], name, COLORS[j % len(COLORS)]), i)
            if gl["random_init"].notna().any():
                put(_line(gl["length"], gl["random_init"], f"random init, {name}",
                          COLORS[j % len(COLORS)], dash="dot"), i)
        ref = g.groupby("length", sort=True)[["bayes", "chance"]].mean()
        for col, dash in (("bayes", "dash"), ("chance", "dashdot")):
            if ref[col].notna().any():
                put(_line(ref.index, ref[col], CONTROL_NAMES[col], "#777", dash=dash), i)
        if metric == "accuracy" and res.critical_length is not None:
            _add_fit(res, i, put, fig, cols)
    fig.update_xaxes(type="log", title_text="length (tokens)")
    fig.update_layout(height=380 * rows, width=1150, margin={"t": 50})
    return fig


def _add_fit(res: StabilityResult, i: int, put: Any, fig: go.Figure, cols: int) -> None:
    c = res.critical_length
    assert c is not None
    if not math.isfinite(c.critical_length):
        return
    x = np.geomspace(min(res.lengths), max(res.lengths), 200)
    put(_line(x, decay_curve(x, c.a, c.critical_length, c.b, c.floor), "fitted decay",
              "#000", dash="solid"), i)
    if c.estimate is not None:
        lo = c.low if c.low is not None else c.estimate
        hi = c.high if c.high is not None else max(res.lengths)
        if lo <= c.estimate <= hi:  # an interval that excludes ℓ_c is not drawn as evidence
            fig.add_vrect(x0=lo, x1=hi, fillcolor="#999", opacity=0.2, line_width=0,
                          row=i // cols + 1, col=i % cols + 1)
        fig.add_vline(x=c.estimate, line_dash="dash", line_color="#000",
                      annotation_text=f"ℓ_c = {sig(c.estimate)}", row=i // cols + 1,
                      col=i % cols + 1)


def wide_table(res: StabilityResult) -> pd.DataFrame:
    """The headline numbers per length, each beside its control."""
    return pd.DataFrame([{
        "length": s.length, "× L": s.multiple, "accuracy": s.accuracy,
        "Bayes acc.": s.bayes_accuracy, "chance": s.chance, "KL bits": s.kl_bits,
        "entropy MAE bits": s.entropy_mae_bits, "attn H / log2 ℓ": s.attention_entropy_norm,
        "attn (random init)": s.attention_entropy_norm_random_init,
        "key orth.": s.key_orthogonality, "key orth. (random init)":
            s.key_orthogonality_random_init, "key orth. chance": s.key_orthogonality_chance,
        "note": s.note} for s in res.per_length])


def format_summary(res: StabilityResult) -> str:
    """The verdict table (:func:`findings`), then the per-length view (:func:`details_text`)."""
    return findings_text(findings(res)) + "\n\n" + details_text(res)


def details_text(res: StabilityResult) -> str:
    """The decay fit and the headline numbers per length, each beside its controls."""
    at = "base length" if res.task == "passkey" else "trained at"
    lines = [f"{res.model} ({res.arch}), {res.task} {at} L = {res.train_length}; "
             f"{res.n_eval} held-out sequences per length; attention and keys up to "
             f"{res.max_attention_length} tokens"]
    c = res.critical_length
    if c is not None:
        lines.append(f"accuracy: {c.text}; fit a = {c.a:.3f}, b = {c.b:.2f}, floor (chance) "
                     f"= {c.floor:.4f}, {c.n_boot} bootstrap replicates "
                     f"({c.n_not_crossed} without a crossing, {c.n_failed} left out)")
    elif "accuracy" in res.metrics:
        lines.append("accuracy: no decay fit (it needs three or more lengths)")
    lines.append(f"{'length':>7} {'acc':>6} {'bayes':>6} {'chance':>6} {'KL':>7} {'MAE':>6} "
                 f"{'attnH/':>7} {'(rand)':>7} {'keyort':>7} {'(rand)':>7} {'(chnc)':>7}")
    for s in res.per_length:
        lines.append(f"{s.length:>7} {s.accuracy:>6.3f} {s.bayes_accuracy:>6.3f} "
                     f"{s.chance:>6.3f} {s.kl_bits:>7.3f} {s.entropy_mae_bits:>6.3f} "
                     f"{s.attention_entropy_norm:>7.3f} "
                     f"{s.attention_entropy_norm_random_init:>7.3f} "
                     f"{s.key_orthogonality:>7.3f} {s.key_orthogonality_random_init:>7.3f} "
                     f"{s.key_orthogonality_chance:>7.3f}")
    notes = sorted({s.note for s in res.per_length if s.note})
    return "\n".join(lines + [f"note: {n}" for n in notes])


def write_report(path: Path, res: StabilityResult, table: pd.DataFrame,
                 manifest: dict[str, Any]) -> Path:
    at = "base length" if res.task == "passkey" else "trained at"
    c = res.critical_length
    notes = sorted({s.note for s in res.per_length if s.note})
    return html_report(path, f"Long-sequence stability — {res.model}", findings(res), [
        ("The run", f"{res.model} ({res.arch}) on {res.task}, {at} L = {res.train_length} "
                    f"tokens, read at {', '.join(map(str, res.lengths))} tokens; {res.n_eval} "
                    f"held-out sequences per length; attention and keys up to "
                    f"{res.max_attention_length} tokens."
                    + (f" Accuracy decay: {c.text}." if c is not None else "")
                    + "".join(f" Note: {n}." for n in notes)),
        ("Metrics against length, with their controls", curves_figure(res, table),
         "Look for: where accuracy (solid) leaves its plateau and falls towards the chance "
         "line, against the fitted decay (black) and ℓ_c (dashed vertical line, its interval "
         "shaded); in the attention and key panels, each layer's solid line against its "
         "random-init twin (dotted, same colour); grey lines are the exact posterior and "
         "chance."),
        ("Per length", wide_table(res)),
        ("Every row", table),
    ], manifest)
