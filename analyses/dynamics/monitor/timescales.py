"""The two timescales of a monitored run: when the attention frame and the values settle,
read from :func:`analyses.dynamics.monitor.result.tidy_log`'s table.

Per layer, the per-interval changes of the attention patterns (``pattern_change``) and of the
values (``value_change``), each averaged over the layer's heads, are accumulated into
path-length fractions Σ_{≤t} change / Σ_all change
(:func:`probes.update_alignment.path_length_fraction`); a curve's settle step is the first
monitor step at which it reaches :data:`LEVEL` (90 %). "The frame settles before the values"
in a layer iff its attention settle step is earlier than its value settle step. The row with
layer ``all`` pools all layers (mean over layers and heads). The learning rate's own
path-length fraction (Σ lr over the intervals, from the log's ``lr`` at each monitor step, i.e.
the rate of the interval's last step times its length) is the reference: a part that only
moves as fast as the schedule lets it settles where the schedule does.
"""

from __future__ import annotations

import numpy as np
import pandas as pd

from ....probes.update_alignment import settle_step

#: the path-length fraction at which a curve counts as settled
LEVEL = 0.9
FRAME_METRIC, VALUE_METRIC = "pattern_change", "value_change"


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
    lr = lr_path(tidy)
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


def lr_path(tidy: pd.DataFrame) -> pd.Series | None:
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
