"""The training-dynamics monitor's rows (:mod:`analyses.dynamics.monitor.run`) as a table.

The monitor's columns in ``metrics.parquet`` are ``dyn.L<layer>.H<head>.<metric>`` (metrics in
:data:`HEAD_METRICS`; value metrics are per kv head, the query head where there is no
grouping) and ``dyn.loss``; :func:`tidy_log` turns them into one row per (step, layer, head,
metric) -- ``dynamics.csv`` -- with layer and head empty for the loss.

Example:
    >>> column(0, 1, "score_follow")
    'dyn.L0.H1.score_follow'

This module never imports the monitor (the monitor imports its names from here).
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

import pandas as pd

from ....windtunnel.runs import read_run

PREFIX = "dyn."
LOSS_COLUMN = "dyn.loss"
#: per-head metrics, in the order they are drawn
HEAD_METRICS = ("score_follow", "value_follow", "pattern_change", "value_change", "value_pc1",
                "value_pr", "value_dim90")
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
