"""Tables, settle steps and figures of the Paper II training-dynamics monitor
(:mod:`analyses.dynamics.monitor`), read from a run's metrics log.

The monitor's columns in ``metrics.parquet`` are ``dyn.L<layer>.H<head>.<metric>`` (metrics in
:data:`HEAD_METRICS`; value metrics are per kv head, the query head where there is no
grouping) and ``dyn.loss``; :func:`tidy_log` turns them into one row per (step, layer, head,
metric) -- ``dynamics.csv`` -- with layer and head empty for the loss.

Two timescales: per layer, the per-interval changes of the attention patterns
(``pattern_change``) and of the values (``value_change``), each averaged over the layer's
heads, are accumulated into path-length fractions Σ_{≤t} change / Σ_all change
(:func:`probes.update_alignment.path_length_fraction`); a curve's settle step is the first
monitor step at which it reaches :data:`LEVEL` (90 %). "The frame settles before the values"
in a layer iff its attention settle step is earlier than its value settle step. The row with
layer ``all`` pools all layers (mean over layers and heads). The learning rate's own
path-length fraction (Σ lr over the intervals, from the log's ``lr`` at each monitor step, i.e.
the rate of the interval's last step times its length) is the reference: a part that only
moves as fast as the schedule lets it settles where the schedule does.

This module never imports the monitor (the monitor imports its names from here).
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd
import plotly.graph_objects as go
from plotly.subplots import make_subplots

from ...probes.update_alignment import path_length_fraction, settle_step
from ...windtunnel.runs import read_run
from ..kit.findings import Finding, findings_text, sig
from ..kit.html import COLORS, html_report
from ..kit.numbers import count, num

PREFIX = "dyn."
LOSS_COLUMN = "dyn.loss"
#: per-head metrics, in the order they are drawn
HEAD_METRICS = ("score_follow", "value_follow", "pattern_change", "value_change", "value_pc1",
                "value_pr", "value_dim90")
#: the path-length fraction at which a curve counts as settled
LEVEL = 0.9
FRAME_METRIC, VALUE_METRIC = "pattern_change", "value_change"
TIDY_COLUMNS = ("step", "layer", "head", "metric", "value")
_COLUMN = re.compile(r"^dyn\.L(\d+)\.H(\d+)\.(\w+)$")


def column(layer: int, head: int, metric: str) -> str:
    """The metrics-log column of one head's metric: ``dyn.L0.H1.score_follow``."""
    return f"{PREFIX}L{layer}.H{head}.{metric}"


def tidy_log(log: pd.DataFrame) -> pd.DataFrame:
    """The monitor's columns of a metrics log as rows (step, layer, head, metric, value), only
    the steps the monitor ran at; layer and head are nullable integers (empty for the loss)."""
    rows: list[dict[str, Any]] = []
    dyn = [c for c in log.columns if c.startswith(PREFIX)]
    if not dyn:
        return pd.DataFrame(columns=list(TIDY_COLUMNS))
    at = log[log[dyn].notna().any(axis=1)]
    for c in [*dyn, *(["lr"] if "lr" in log.columns else [])]:
        m = _COLUMN.match(c)
        layer, head, metric = ((int(m[1]), int(m[2]), m[3]) if m else
                               (None, None, c.removeprefix(PREFIX)))
        for step, v in zip(at["step"], at[c], strict=True):
            if c == "lr" and pd.isna(v):
                continue
            rows.append({"step": int(step), "layer": layer, "head": head, "metric": metric,
                         "value": float(v)})
    out = pd.DataFrame(rows, columns=list(TIDY_COLUMNS))
    out = out.astype({"layer": "Int64", "head": "Int64"})
    return out.sort_values(["metric", "layer", "head", "step"], ignore_index=True)


def read_dynamics(run: str | Path) -> pd.DataFrame:
    """:func:`tidy_log` of a finished run's ``metrics.parquet``."""
    return tidy_log(read_run(run).log(columns=("step",)))


def layer_means(tidy: pd.DataFrame, metric: str) -> pd.DataFrame:
    """Wide [step × layer] of ``metric`` averaged over each layer's heads, plus a column
    ``"all"`` (the mean over every head of every layer)."""
    d = tidy[tidy["metric"] == metric]
    wide = d.pivot_table(index="step", columns="layer", values="value", aggfunc="mean")
    wide.columns = [int(c) for c in wide.columns]
    wide["all"] = d.groupby("step")["value"].mean()
    return wide.sort_index()


def settle_steps(tidy: pd.DataFrame, level: float = LEVEL) -> pd.DataFrame:
    """Per layer (and ``"all"``): the steps at which the attention patterns' and the values'
    path-length fractions reach ``level``, and whether the frame settles first (module doc)."""
    frame, values = layer_means(tidy, FRAME_METRIC), layer_means(tidy, VALUE_METRIC)
    lr = _lr_path(tidy)
    lr_step = None if lr is None else settle_step(lr.index.to_numpy(), lr.to_numpy(), level)
    rows = []
    for layer in frame.columns:
        a = settle_step(frame.index.to_numpy(), frame[layer].to_numpy(), level)
        v = settle_step(values.index.to_numpy(), values[layer].to_numpy(), level)
        rows.append({"layer": str(layer), "attention_settle_step": a, "value_settle_step": v,
                     "lr_settle_step": lr_step,
                     "frame_first": None if a is None or v is None else bool(a < v)})
    return pd.DataFrame(rows).astype({"attention_settle_step": "Int64",
                                      "value_settle_step": "Int64", "lr_settle_step": "Int64"})


def _lr_path(tidy: pd.DataFrame) -> pd.Series | None:
    """Σ lr per interval (the rate at the interval's end times its length), by step; None
    when the log had no learning rate."""
    d = tidy[tidy["metric"] == "lr"].set_index("step")["value"].sort_index()
    if d.empty:
        return None
    steps = d.index.to_numpy()
    return d * np.diff(steps, prepend=0)


def phase_means(tidy: pd.DataFrame, metrics: tuple[str, ...] = ("score_follow", "value_follow",
                "value_pc1"), phases: int = 3) -> pd.DataFrame:
    """Mean of each metric over each layer's heads (and ``"all"``) in consecutive equal thirds
    (``phases``) of the monitor steps: columns layer, metric, then one per phase
    (``early``, ``middle``, ``late`` for three; else ``phase1``..)."""
    names = ["early", "middle", "late"] if phases == 3 else [f"phase{i + 1}"
                                                             for i in range(phases)]
    rows = []
    for metric in metrics:
        wide = layer_means(tidy, metric)
        parts = np.array_split(np.arange(len(wide)), phases)
        for layer in wide.columns:
            v = wide[layer].to_numpy()
            rows.append({"layer": str(layer), "metric": metric,
                         **{n: float(np.nanmean(v[p])) if p.size else np.nan
                            for n, p in zip(names, parts, strict=True)}})
    return pd.DataFrame(rows)


def timescale_figure(tidy: pd.DataFrame, level: float = LEVEL) -> go.Figure:
    """Cumulative path-length fraction of the patterns (solid) and values (dashed) per layer
    against the step, the ``level`` line and each curve's settle step marked."""
    fig = go.Figure()
    for metric, dash, label in ((FRAME_METRIC, "solid", "attention pattern"),
                                (VALUE_METRIC, "dash", "values")):
        wide = layer_means(tidy, metric)
        steps = wide.index.to_numpy()
        for i, layer in enumerate(wide.columns):
            colour = "#444444" if layer == "all" else COLORS[i % len(COLORS)]
            frac = path_length_fraction(wide[layer].to_numpy())
            name = f"{label}, {'all layers' if layer == 'all' else f'layer {layer}'}"
            fig.add_trace(go.Scatter(x=steps, y=frac, name=name, mode="lines",
                                     line={"color": colour, "dash": dash}))
            s = settle_step(steps, wide[layer].to_numpy(), level)
            if s is not None:
                fig.add_trace(go.Scatter(
                    x=[s], y=[frac[np.flatnonzero(steps == s)[0]]], mode="markers",
                    showlegend=False, marker={"symbol": "star", "size": 13, "color": colour},
                    hovertemplate=f"{name} reaches {level:.0%} at step {s}<extra></extra>"))
    lr = _lr_path(tidy)
    if lr is not None:
        fig.add_trace(go.Scatter(x=lr.index, y=path_length_fraction(lr.to_numpy()),
                                 name="learning rate (Σ lr), the reference", mode="lines",
                                 line={"color": "#999999", "dash": "dot"}))
    fig.add_hline(y=level, line_dash="dot", annotation_text=f"{level:.0%} of the path")
    fig.update_xaxes(title_text="training step")
    fig.update_yaxes(title_text="cumulative path-length fraction", range=[0, 1.02])
    fig.update_layout(height=460, margin={"t": 30})
    return fig


def metrics_figure(tidy: pd.DataFrame) -> go.Figure:
    """Every per-head metric (one panel each) and the monitor batch's loss against the step:
    a line per head, coloured by layer."""
    panels = [m for m in HEAD_METRICS if (tidy["metric"] == m).any()]
    has_loss = (tidy["metric"] == "loss").any()
    titles = [*panels, *(["loss (monitor batch, nats)"] if has_loss else [])]
    ncols = 2
    nrows = max(1, -(-len(titles) // ncols))
    fig = make_subplots(rows=nrows, cols=ncols, subplot_titles=titles, vertical_spacing=0.07)
    shown: set[int] = set()
    for k, metric in enumerate(panels):
        d = tidy[tidy["metric"] == metric]
        for (layer, head), g in d.groupby(["layer", "head"]):
            fig.add_trace(go.Scatter(
                x=g["step"], y=g["value"], mode="lines", name=f"layer {layer}",
                legendgroup=f"L{layer}", showlegend=int(layer) not in shown,
                line={"color": COLORS[int(layer) % len(COLORS)], "width": 1.2},
                hovertemplate=f"L{layer} H{head} step %{{x}}: %{{y:.4g}}<extra>{metric}"
                              "</extra>"), row=k // ncols + 1, col=k % ncols + 1)
            shown.add(int(layer))
    if has_loss:
        k = len(panels)
        d = tidy[tidy["metric"] == "loss"]
        fig.add_trace(go.Scatter(x=d["step"], y=d["value"], mode="lines", name="loss",
                                 line={"color": "#444444"}), row=k // ncols + 1,
                      col=k % ncols + 1)
    fig.update_layout(height=260 * nrows, margin={"t": 40})
    return fig


def _n(x: Any) -> str:
    return num(x, 3, "g")


def _step(x: Any) -> str:
    return count(x)


#: the alignments and the specialisation read in the verdict table: metric -> claim
_CLAIMS = {
    "score_follow": "score updates follow advantage (Paper II monitor: cosine of the actual "
                    "change of the centred scores with the routing law's −∂L/∂s)",
    "value_follow": "value updates follow the responsibility-weighted error (Paper II "
                    "monitor: cosine of the actual value change with −Σ_i α_ij u_i)",
}
_NO_TEST = "the monitor computes no random-direction control and no test"


def findings(tidy: pd.DataFrame, level: float = LEVEL) -> list[Finding]:
    """The verdict table of a monitored run: the two-timescale read-out (pooled over layers,
    decided by the settle-step rule of the module doc), the two alignments (mean over heads,
    layers and intervals; no criterion in the monitor) and the values' PC1 share."""
    if tidy.empty or not (tidy["metric"] == FRAME_METRIC).any():
        return [Finding("the frame settles before the values (Paper II two-timescale)", None,
                        undefined="the monitor logged no intervals")]
    st = settle_steps(tidy, level)
    pooled = st[st["layer"] == "all"].iloc[0]
    per_layer = st[st["layer"] != "all"]
    a, v, lr = (pooled["attention_settle_step"], pooled["value_settle_step"],
                pooled["lr_settle_step"])
    first = pooled["frame_first"]
    layer_first = [None if pd.isna(x) else x for x in per_layer["frame_first"]]
    lr_text = ("the log has no learning rate" if pd.isna(lr) else
               f"the learning-rate schedule reaches {level:.0%} of its path at step "
               f"{_step(lr)}: a part settling there may only follow the schedule")
    out = [Finding(
        f"the attention frame settles before the values (Paper II two-timescale; monitor "
        f"rule, pooled over layers; value: the step at which the patterns' path length "
        f"reaches {level:.0%})", None if pd.isna(a) else float(a),
        control=f"values reach {level:.0%} at step {_step(v)}",
        survives=None if pd.isna(first) else bool(first),
        evidence=f"frame first in {sum(x is not None and bool(x) for x in layer_first)} of "
                 f"{len(per_layer)} layers; {lr_text}",
        undefined="no settle step")]
    ph = phase_means(tidy).set_index(["layer", "metric"])
    for metric, claim in _CLAIMS.items():
        if ("all", metric) not in ph.index:
            continue
        r = ph.loc[("all", metric)]
        mean = float(layer_means(tidy, metric)["all"].mean())
        out.append(Finding(
            f"{claim}, mean over heads, layers and intervals", mean,
            control="0: a change unrelated to the prediction", survives=None,
            evidence=f"early / middle / late thirds {sig(r['early'])} / {sig(r['middle'])} / "
                     f"{sig(r['late'])}; {_NO_TEST}",
            undefined="no finite cosine (a head that did not move)"))
    if ("all", "value_pc1") in ph.index:
        r = ph.loc[("all", "value_pc1")]
        out.append(Finding(
            "the values specialise (PC1 share of each head's value vectors, mean over heads "
            "and layers, late third)", float(r["late"]),
            control=f"early third {sig(r['early'])}", survives=None,
            evidence=f"middle third {sig(r['middle'])}; the monitor has no criterion for "
                     "specialisation", undefined="no value vectors read"))
    return out


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
        lines.append(f"{r.layer:<6} {_step(r.attention_settle_step):>9} "
                     f"{_step(r.value_settle_step):>7} {r.frame_first!s:>11}")
    lr = st["lr_settle_step"].iloc[0] if len(st) else None
    lines.append(f"learning-rate schedule reaches {level:.0%} of its path at step {_step(lr)}")
    lines.append(f"{'layer':<6} {'metric':<13} {'early':>7} {'middle':>7} {'late':>7}")
    for r in ph.itertuples():
        lines.append(f"{r.layer:<6} {r.metric:<13} {_n(r.early):>7} {_n(r.middle):>7} "
                     f"{_n(r.late):>7}")
    return "\n".join(lines)


def write_report(path: Path, tidy: pd.DataFrame, title: str, definitions: str,
                 manifest: dict[str, Any] | None = None) -> Path:
    """``dynamics.html``: the verdict table, summary, the two-timescale figure, every metric,
    the tables."""
    st = settle_steps(tidy)
    pooled = st[st["layer"] == "all"]
    summary = "no monitor rows" if pooled.empty else (
        f"{tidy['step'].nunique()} intervals. Pooled over layers, the attention patterns make "
        f"{LEVEL:.0%} of their path by step {_step(pooled['attention_settle_step'].iloc[0])}, "
        f"the values by step {_step(pooled['value_settle_step'].iloc[0])}, the learning-rate "
        f"schedule by step {_step(pooled['lr_settle_step'].iloc[0])}; the frame settles first: "
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
