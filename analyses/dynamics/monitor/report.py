"""The terminal summary and ``dynamics.html`` of the Paper II training-dynamics monitor
(:mod:`analyses.dynamics.monitor.run`), read from the monitor's tidy table
(:mod:`.result`): the verdict table (:mod:`.findings`), the settle steps and phase means
(:mod:`.timescales`) and the figures (:mod:`.figures`)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pandas as pd

from ...kit.findings import findings_text
from ...kit.html import html_report
from ...kit.numbers import count, num
from .figures import metrics_figure, timescale_figure
from .findings import findings
from .timescales import LEVEL, phase_means, settle_steps


def format_summary(tidy: pd.DataFrame, level: float = LEVEL) -> str:
    """Terminal view: the verdict table, settle steps per layer and the early/late means of
    the alignments."""
    if tidy.empty:
        return findings_text(findings(tidy, level)) + "\nno monitor rows"
    st, ph = settle_steps(tidy, level), phase_means(tidy)
    steps = sorted(tidy["step"].unique())
    lines = [findings_text(findings(tidy, level)), "",
             f"Paper II monitor: {len(steps)} intervals, steps {steps[0]}..{steps[-1]}; settle "
             f"step = {level:.0%} of the path length",
             f"{'layer':<6} {'attention':>9} {'values':>7} {'frame first':>11}"]
    for r in st.itertuples():
        lines.append(f"{r.layer:<6} {count(r.attention_settle_step):>9} "
                     f"{count(r.value_settle_step):>7} {r.frame_first!s:>11}")
    lr = st["lr_settle_step"].iloc[0] if len(st) else None
    lines.append(f"learning-rate schedule reaches {level:.0%} of its path at step {count(lr)}")
    lines.append(f"{'layer':<6} {'metric':<13} {'early':>7} {'middle':>7} {'late':>7}")
    for r in ph.itertuples():
        lines.append(f"{r.layer:<6} {r.metric:<13} {num(r.early, 3, 'g'):>7} "
                     f"{num(r.middle, 3, 'g'):>7} {num(r.late, 3, 'g'):>7}")
    return "\n".join(lines)


def write_report(path: Path, tidy: pd.DataFrame, title: str, definitions: str,
                 manifest: dict[str, Any] | None = None) -> Path:
    """``dynamics.html``: the verdict table, summary, the two-timescale figure, every metric,
    the tables."""
    st = settle_steps(tidy)
    pooled = st[st["layer"] == "all"]
    summary = "no monitor rows" if pooled.empty else (
        f"{tidy['step'].nunique()} intervals. Pooled over layers, the attention patterns make "
        f"{LEVEL:.0%} of their path by step {count(pooled['attention_settle_step'].iloc[0])}, "
        f"the values by step {count(pooled['value_settle_step'].iloc[0])}, the learning-rate "
        f"schedule by step {count(pooled['lr_settle_step'].iloc[0])}; the frame settles first: "
        f"{pooled['frame_first'].iloc[0]}.")
    return html_report(path, f"Training dynamics (Paper II monitor) — {title}",
                       findings(tidy), [
        ("Summary", summary),
        ("Definitions", definitions),
        ("Two timescales: how much of its total movement each part has made",
         timescale_figure(tidy),
         f"Look for: in each layer (one colour), the solid attention-pattern curve reaching "
         f"the dotted {LEVEL:.0%} line (its star) before the dashed value curve does — the "
         "frame settling first; dark grey pools all layers, and the light grey dotted curve "
         "is the learning-rate schedule's own path, where a part that only follows the "
         "schedule settles."),
        ("Settle steps", st),
        ("Per head against the training step", metrics_figure(tidy),
         "Look for: score_follow and value_follow above 0 (the update follows the routing "
         "law's prediction; 0 is unrelated), and how they fade; value_pc1 rising as a layer's "
         "values specialise. One line per head, coloured by layer as in the legend."),
        ("Early / middle / late thirds (mean over heads)", phase_means(tidy)),
    ], manifest)
