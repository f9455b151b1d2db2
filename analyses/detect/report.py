"""Verdict table, figures, tables and terminal view of ``bayesgeom detect``
(:mod:`analyses.detect.run`).

:func:`findings` holds the key frame against its controls: the orthogonality score of Paper I
(1 − mean |cos| of the unit keys) against the random-init twin and random vectors, over all
scored layers and at the best one, and isotropy beside it. The run computes no significance
test (one frame per head), so a claim survives when the trained score is on the passing side of
both controls -- the rule ``bayesgeom monitor`` applies to the same number (``beats both``).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pandas as pd
import plotly.graph_objects as go
from plotly.subplots import make_subplots

from ...probes.key_frame import welch_bound
from ..kit.findings import Finding, findings_text
from ..kit.html import html_report
from ..kit.learned import gate
from ..kit.numbers import sig
from .result import CONDITIONS, DetectResult

#: how the per-layer table's columns read in the report
LAYER_LABELS = {"mean_abs_cos": "mean |cos|", "orthogonality": "orthogonality 1 − mean |cos|",
                "chance": "orthogonality of random vectors", "ceiling": "Welch ceiling",
                "vs_ceiling": "orthogonality ÷ ceiling", "isotropy": "isotropy (centred PR)",
                "isotropy_chance": "isotropy of random vectors",
                "utilisation": "utilisation (effective rank / d)"}
#: the criterion a verdict follows (the run has no test of its own)
RULE = "criterion: above both controls (monitor's beats-both rule); no significance test"


def _layers(res: DetectResult) -> tuple[pd.DataFrame, pd.DataFrame]:
    """(trained, random-init twin) layer means, indexed by layer."""
    means = res.layer_means()
    return (means[means["condition"] == "trained"].set_index("layer"),
            means[means["condition"] == "random_init"].set_index("layer"))


def _ceiling(res: DetectResult, value: float) -> str:
    if res.orthogonalisable:
        return ""
    top = 1 - welch_bound(res.n_frame_tokens, res.d_head)
    return (f"; m = {res.n_frame_tokens} > d = {res.d_head}: Welch ceiling {sig(top)}, "
            f"score ÷ ceiling {sig(value / top)}")


def findings(res: DetectResult) -> list[Finding]:
    """The verdict rows (module doc): orthogonality over all layers, at the best layer (when
    there are several), and isotropy beside it (no verdict: it is not tested)."""
    tr, tw = _layers(res)
    n = len(tr)
    o, o0 = float(tr["orthogonality"].mean()), float(tw["orthogonality"].mean())
    ch = float(tr["chance"].mean())
    above = int((tr["orthogonality"] > tw["orthogonality"]).sum())
    frame = f"frame: {res.n_frame_tokens} {res.frame} in d = {res.d_head}"
    out = [Finding(
        f"keys are orthogonal (Paper I: 1 − mean |cos| of the unit keys, no centring; mean "
        f"over {n} layer{'s' * (n > 1)} and kv heads; {frame})", o,
        control=f"random-init twin {sig(o0)}; random vectors {sig(ch)}",
        survives=o > o0 and o > ch,
        evidence=f"gap {o - o0:+.3g} over the twin, {o - ch:+.3g} over random vectors; above "
                 f"the twin in {above} of {n} layers{_ceiling(res, o)}; {RULE}")]
    if n > 1:
        best = int(tr["orthogonality"].idxmax())
        b, b0, bch = (float(tr.at[best, "orthogonality"]), float(tw.at[best, "orthogonality"]),
                      float(tr.at[best, "chance"]))
        out.append(Finding(
            f"keys are orthogonal at the best layer, {best} (Paper I's score, mean over its kv "
            "heads; the layer monitor judges)", b,
            control=f"random-init twin {sig(b0)} at layer {best}; random vectors {sig(bch)}",
            survives=b > b0 and b > bch,
            evidence=f"gap {b - b0:+.3g} over the twin; the best of {n} layers is selected, so "
                     f"read the all-layer row first{_ceiling(res, b)}; {RULE}"))
    iso, iso0, isoc = (float(tr["isotropy"].mean()), float(tw["isotropy"].mean()),
                       float(tr["isotropy_chance"].mean()))
    out.append(Finding(
        "the keys fill their dimensions evenly (isotropy (PR − 1)/(n − 1) of the centred unit "
        "keys; a different property from orthogonality; mean over layers)", iso,
        control=f"random-init twin {sig(iso0)}; random vectors {sig(isoc)}", survives=None,
        evidence=f"gap {iso - iso0:+.3g} over the twin; no criterion: isotropy is reported "
                 "beside the headline, not tested"))
    return gate(out, res.learned)


def heatmap_figure(table: pd.DataFrame) -> go.Figure:
    """Orthogonality (1 − mean |cos|) and isotropy per layer × head, trained beside random
    init; one colour scale (0 to 1) for all four panels."""
    names = {"trained": "trained", "random_init": "random-init twin"}
    fig = make_subplots(rows=2, cols=2, subplot_titles=[
        f"{what}: {names[c]}" for what in ("orthogonality 1 − mean |cos|",
                                           "isotropy (centred PR)") for c in CONDITIONS],
        vertical_spacing=0.15)
    for r, metric in enumerate(("orthogonality", "isotropy"), start=1):
        for col, c in enumerate(CONDITIONS, start=1):
            w = table[table["condition"] == c].pivot(index="layer", columns="head",
                                                     values=metric)
            fig.add_trace(go.Heatmap(z=w.to_numpy(), x=[f"h{h}" for h in w.columns],
                                     y=[f"L{L}" for L in w.index], zmin=0, zmax=1,
                                     colorscale="Viridis", name=f"{metric}, {names[c]}",
                                     colorbar={"title": {"text": "score (0–1)"}},
                                     showscale=col == 2 and r == 1),
                          row=r, col=col)
    fig.update_layout(height=700, width=1000, margin={"t": 50})
    return fig


def frame_note(res: DetectResult) -> str:
    """Whether the frame can be orthogonal at all, and the best score a frame of its shape
    reaches (the Welch ceiling) when it cannot."""
    m, d = res.n_frame_tokens, res.d_head
    if res.orthogonalisable:
        return f"m = {m} keys in d = {d} dims: an orthogonal frame is possible (ceiling 1)"
    w = welch_bound(m, d)
    return (f"m = {m} keys > d = {d} dims: NOT orthogonalisable -- m vectors in R^d cannot be "
            f"mutually orthogonal; the Welch bound √((m−d)/(d(m−1))) = {w:.3f} caps the most "
            f"uniform frame at {1 - w:.3f}, and 'vs ceiling' = score ÷ {1 - w:.3f}")


def details_text(res: DetectResult) -> str:
    """Per layer: the orthogonality score trained / random init / random vectors (and ÷ the
    ceiling where m > d), then isotropy and utilisation, each labelled by its definition."""
    means = res.layer_means()
    lines = [f"{res.model} · frame: {res.n_frame_tokens} {res.frame} · {res.n_kv_heads} kv "
             f"heads of {res.d_head} dims · random-init twin seed {res.twin_seed}",
             "orthogonality = 1 − mean |cos| of the unit keys (Paper I; 1 = pairwise "
             "orthogonal); random = Gaussian vectors of the frame's shape",
             frame_note(res),
             f"{'layer':<6} {'orth trained':>12} {'random init':>12} {'random vec':>11} "
             f"{'vs ceiling':>11} {'isotropy':>9} {'(twin)':>7} {'util':>6}"]
    for L in res.layers:
        t = means[(means["condition"] == "trained") & (means["layer"] == L)].iloc[0]
        r = means[(means["condition"] == "random_init") & (means["layer"] == L)].iloc[0]
        lines.append(f"{L:<6} {t['orthogonality']:>12.3f} {r['orthogonality']:>12.3f} "
                     f"{t['chance']:>11.3f} {t['vs_ceiling']:>11.3f} {t['isotropy']:>9.3f} "
                     f"{r['isotropy']:>7.3f} {t['utilisation']:>6.3f}")
    lines.append("isotropy = (PR − 1)/(n − 1) of the centred unit keys' singular values (how "
                 "evenly the frame fills its dimensions; not orthogonality); util = effective "
                 "rank / d")
    return "\n".join(lines)


def format_summary(res: DetectResult) -> str:
    """The verdict table (:func:`findings`), then the per-layer view (:func:`details_text`)."""
    return findings_text(findings(res)) + "\n\n" + details_text(res)


def write_report(path: Path, res: DetectResult, table: pd.DataFrame,
                 manifest: dict[str, Any]) -> Path:
    layers = res.layer_means().replace({"condition": {"random_init": "random-init twin"}})
    return html_report(path, f"Key-frame detector — {res.model}", findings(res), [
        ("The frame", f"{res.model}: {res.n_frame_tokens} {res.frame} as keys, {res.n_kv_heads} "
                      f"kv heads of {res.d_head} dims, random-init twin seed {res.twin_seed}. "
                      f"{frame_note(res)}. Orthogonality = 1 − mean |cos| of the unit keys "
                      "(Paper I; 1 = pairwise orthogonal); isotropy = (PR − 1)/(n − 1) of the "
                      "centred unit keys (how evenly they fill their dimensions; not "
                      "orthogonality)."),
        ("Per layer and head, beside the random-init twin", heatmap_figure(table),
         "Look for: brighter cells (higher scores) in the trained panels (left) than in the "
         "random-init twin's (right) at the same layer and head; top row orthogonality, "
         "bottom row isotropy, one colour scale from 0 to 1."),
        ("Per layer (means over heads)", layers.rename(columns=LAYER_LABELS)),
        ("Every head", table),
    ], manifest)
