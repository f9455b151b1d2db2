"""The verdict table, figures, tables and terminal view of a lens run
(:mod:`analyses.lens.run`).

A claim survives when its interval lies wholly on the claimed side of its controls' intervals
(BCa over the held-out prompts): the trained model's Bayes lens below the random-init twin's
and below the position-only baseline. The depth where the model's answer forms is a threshold
reading (``formed_bits``), with no control, so it carries no verdict.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pandas as pd
import plotly.graph_objects as go
from plotly.subplots import make_subplots

from ...probes.bootstrap import EXCLUDES_NOTE
from ..kit.findings import Finding, findings_text
from ..kit.html import COLORS, html_report
from ..kit.learned import gate
from ..kit.numbers import sig
from .result import DEFINITIONS, LensResult, LensScore
from .scores import clears, usable

#: (condition, lens) -> (legend name, colour index, dash) of every line drawn
LINES = {("trained", "logit"): ("logit lens", 0, "solid"),
         ("trained", "bayes"): ("Bayes lens (fit to p*)", 1, "solid"),
         ("trained", "tuned"): ("tuned lens (fit to final output)", 2, "solid"),
         ("random_init", "logit"): ("twin: logit lens", 0, "dash"),
         ("random_init", "bayes"): ("twin: Bayes lens", 1, "dash"),
         ("position_only", "position_mean"): ("position only", 3, "dot")}
#: metric -> panel title
PANELS = {"kl_posterior": "KL(p* ‖ lens), held-out (bits)",
          "kl_final": "KL(final output ‖ lens), held-out (bits)",
          "entropy_mae": "|H(lens) − H(p*)|, held-out (bits)"}

CURVES_CAPTION = (
    "Look for: the solid red Bayes-lens line falling below the dashed red twin line and the "
    "dotted position-only line (KL to p*, left; shaded: BCa intervals over the held-out "
    "prompts): the depth where it first clears both is where the posterior becomes "
    "decodable. The blue logit lens reaching the model's own output (middle, near 0) marks "
    "where the answer forms; a Bayes lens far below the logit lens at the same depth means "
    "the posterior is there but not yet in the unembedding's coordinates.")


def _iv(s: LensScore, metric: str = "kl_posterior") -> str:
    return (f"{sig(getattr(s, f'{metric}_bits'))} [{sig(getattr(s, f'{metric}_low'))}, "
            f"{sig(getattr(s, f'{metric}_high'))}]")


def _verdict(s: LensScore, *controls: LensScore) -> bool | None:
    """Survives when ``s``'s interval lies below every control's; None where an interval
    leaves out its own estimate (not evidence)."""
    if not all(usable(x) for x in (s, *controls)):
        return None
    return clears(s, *controls)


def _evidence(s: LensScore, *controls: LensScore) -> str:
    bad = [x for x in (s, *controls) if not usable(x)]
    if bad:
        return f"{EXCLUDES_NOTE} ({', '.join(f'{x.condition} {x.lens}' for x in bad)})"
    return f"interval {_iv(s)} against the controls' (BCa over held-out prompts, level 0.95)"


def findings(res: LensResult) -> list[Finding]:
    """The verdict table (module doc), behind a wind tunnel's learned check."""
    last = res.depths[-1]
    t, w = res.score("trained", "bayes", last), res.score("random_init", "bayes", last)
    p = res.score("position_only", "position_mean", last)
    own, own_twin = res.score("trained", "logit", last), res.score("random_init", "logit", last)
    where = f"depth {last} ({res.sites[-1]}), {res.n_test} held-out prompts"
    rows = [
        Finding(f"the exact posterior is decodable from the last block's output (Bayes lens: "
                f"held-out KL(p* ‖ lens)), {where}", t.kl_posterior_bits, unit="bits",
                control=f"random-init twin's Bayes lens {_iv(w)}; position only {_iv(p)}",
                survives=_verdict(t, w, p), evidence=_evidence(t, w, p),
                undefined="no held-out prompt was scored"),
        Finding(f"the model's own output matches the exact posterior (KL(p* ‖ output): the "
                f"logit lens at the last depth), {where}", own.kl_posterior_bits, unit="bits",
                control=f"random-init twin's output {_iv(own_twin)}; position only {_iv(p)}",
                survives=_verdict(own, own_twin, p), evidence=_evidence(own, own_twin, p),
                undefined="no held-out prompt was scored"),
    ]
    d = res.decodable_depth
    at = (f"at depth {d}: Bayes lens {_iv(res.score('trained', 'bayes', d))}, twin "
          f"{_iv(res.score('random_init', 'bayes', d))}, position only "
          f"{_iv(res.score('position_only', 'position_mean', d))}" if d is not None
          else "no depth's Bayes-lens interval lies below both controls'")
    rows.append(Finding(
        "first depth at which the posterior is decodable beyond the twin and position alone "
        f"(Bayes lens; depths {res.depths[0]}..{last})", d, survives=d is not None,
        control="the twin's Bayes lens and the position-only baseline at the same depth",
        evidence=at, undefined="no depth clears both controls"))
    a, tuned = res.answer_depth.get("logit"), res.answer_depth.get("tuned")
    pd_ = res.posterior_depth
    bits = sig(res.formed_bits)
    rows.append(Finding(
        f"depth at which the model's answer forms (the logit lens stays within {bits} bits "
        "KL of the model's final output from there on)", a, survives=None,
        control="none: a threshold reading",
        evidence=f"no criterion; the tuned lens does from depth {tuned}; the Bayes lens stays "
                 f"within {bits} bits of p* from depth {pd_}" + (
                     "" if a is None or pd_ is None else
                     f" ({a - pd_} depth(s) earlier)" if a > pd_ else " (not earlier)"),
        undefined="the logit lens stays within the threshold at no depth, not even the last"))
    return gate(rows, res.learned)


def curves_figure(table: pd.DataFrame) -> go.Figure:
    """One panel per metric of :data:`PANELS`, per depth, a line per (condition, lens) of
    :data:`LINES` with its interval shaded; log y-axes."""
    fig = make_subplots(rows=1, cols=len(PANELS), subplot_titles=list(PANELS.values()))
    for j, metric in enumerate(PANELS, start=1):
        for (cond, lens), (name, ci, dash) in LINES.items():
            g = table[(table["condition"] == cond) & (table["lens"] == lens)].sort_values(
                "depth")
            if g.empty:
                continue
            color = COLORS[ci % len(COLORS)]
            x = g["depth"].tolist()
            fig.add_trace(go.Scatter(
                x=x + x[::-1], y=g[f"{metric}_high"].tolist() + g[f"{metric}_low"].tolist()[::-1],
                fill="toself", line={"width": 0}, fillcolor=color, opacity=0.15,
                hoverinfo="skip", showlegend=False, legendgroup=name), row=1, col=j)
            fig.add_trace(go.Scatter(x=x, y=g[f"{metric}_bits"], name=name, legendgroup=name,
                                     mode="lines+markers", showlegend=j == 1,
                                     line={"color": color, "dash": dash}), row=1, col=j)
        fig.update_yaxes(type="log", row=1, col=j)
        fig.update_xaxes(title_text="depth (0: embeddings)", row=1, col=j)
    fig.update_layout(height=420, width=1200, margin={"t": 50})
    return fig


def wide_table(table: pd.DataFrame) -> pd.DataFrame:
    """Per depth: KL to p* (held-out) of each line of :data:`LINES`, and the logit and tuned
    lenses' KL to the final output (the report's table)."""
    out = table[["depth", "site"]].drop_duplicates("depth").set_index("depth")
    for (cond, lens), (name, _, _) in LINES.items():
        g = table[(table["condition"] == cond) & (table["lens"] == lens)].set_index("depth")
        out[f"KL(p*‖·): {name}"] = g["kl_posterior_bits"]
    for lens in ("logit", "tuned"):
        g = table[(table["condition"] == "trained") & (table["lens"] == lens)]
        out[f"KL(final‖·): {lens}"] = g.set_index("depth")["kl_final_bits"]
    return out.reset_index()


def setup_text(res: LensResult) -> str:
    """What was read, on what, and how the translators were fitted."""
    what = (f"SULA main condition, labels {'/'.join(res.hypotheses)}, k in "
            f"{', '.join(map(str, res.ks))}" if res.source == "SULA"
            else f"{res.task} (its own exact posteriors over {len(res.hypotheses)} hypotheses)")
    return (f"{res.model} ({res.n_layers} layers, width {res.d_model}) on {what}. Lenses "
            f"fitted on {res.n_train} prompts ({res.n_train_rows} rows), scored on "
            f"{res.n_test} held-out prompts ({res.n_test_rows} rows); L-BFGS {res.steps} "
            f"iterations, l2 {sig(res.l2)}; {res.n_boot} bootstrap resamples; random-init twin "
            f"seed {res.twin_seed}; position only: the {res.position_baseline} of p*. Readout "
            "check (|lens at the last depth − the model's "
            "logits|): " + ", ".join(f"{c} {sig(v)}" for c, v in
                                     res.readout_max_abs_diff.items()) + ".")


def summary_table(res: LensResult) -> str:
    """Per depth: KL(p* ‖ ·) of the trained logit, Bayes and tuned lenses, the twin's Bayes
    lens and position only; the logit lens' KL to the final output."""
    lines = [setup_text(res),
             "KL(p* ‖ lens), held-out, bits (mean over prompts):",
             f"{'depth':>5} {'site':<14} {'logit':>8} {'bayes':>8} {'tuned':>8} "
             f"{'twin bayes':>10} {'position':>9} {'KL(final‖logit)':>16}"]
    for d, s in zip(res.depths, res.sites, strict=True):
        v = [res.score(c, lens, d).kl_posterior_bits for c, lens in (
            ("trained", "logit"), ("trained", "bayes"), ("trained", "tuned"),
            ("random_init", "bayes"), ("position_only", "position_mean"))]
        fin = res.score("trained", "logit", d).kl_final_bits
        lines.append(f"{d:>5} {s:<14} {sig(v[0]):>8} {sig(v[1]):>8} {sig(v[2]):>8} "
                     f"{sig(v[3]):>10} {sig(v[4]):>9} {sig(fin):>16}")
    lines.append(f"posterior decodable beyond the controls from depth {res.decodable_depth}, "
                 f"within {sig(res.formed_bits)} bits of p* (Bayes lens) from depth "
                 f"{res.posterior_depth}; answer formed (logit lens) at depth "
                 f"{res.answer_depth.get('logit')}, (tuned lens) at depth "
                 f"{res.answer_depth.get('tuned')}")
    return "\n".join(lines)


def format_summary(res: LensResult) -> str:
    """The verdict table (:func:`findings`), then :func:`summary_table`."""
    quick = "QUICK RUN: a smoke test, no number below is a result\n" if res.quick else ""
    return quick + findings_text(findings(res)) + "\n" + summary_table(res)


def definitions_table(res: LensResult) -> pd.DataFrame:
    """Every measurement's definition (:data:`analyses.lens.result.DEFINITIONS`)."""
    return pd.DataFrame({"term": list(res.definitions or DEFINITIONS),
                         "definition": list((res.definitions or DEFINITIONS).values())})


def write_report(path: Path, res: LensResult, table: pd.DataFrame,
                 manifest: dict[str, Any]) -> Path:
    return html_report(path, f"Lenses — {res.model} on {res.task}", findings(res), [
        ("Set-up", setup_text(res)),
        ("Per depth: every lens beside the twin and position alone", curves_figure(table),
         CURVES_CAPTION),
        ("Per depth", wide_table(table)),
        ("Definitions", definitions_table(res)),
        ("Every score (condition × lens × depth)", table),
    ], manifest, quick=res.quick)
