"""The typed result of ``bayesgeom sweep``: its ``summary.json`` is the serialisation of it
(:func:`records.write_result`)."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

#: a cell's row: the final evaluation's metrics (bits, except accuracy)
METRICS = ("entropy_mae_bits", "entropy_mae_curve_bits", "kl_bits", "tvd", "accuracy",
           "params", "steps", "wall_s")


@dataclass
class SweepCell:
    """One run of a sweep: where it is and how it ended (``trained``, ``reused``, ``failed``)."""

    name: str
    task: str
    arch: str
    preset: str
    seed: int
    status: str
    error: str | None = None


@dataclass
class SweepResult:
    """A sweep: its cells and, per (task, arch, preset) and metric, n, mean, sd and the 95 %
    t-interval of the mean over seeds (``aggregate``, the rows of ``aggregate.parquet``);
    ``controls``: per task, the per-sample entropy MAE (bits) of the untrained controls the
    cells are held against (:mod:`windtunnel.baselines`: chance, the HMM filter ladder)."""

    cells: list[SweepCell]
    aggregate: list[dict[str, Any]]
    reused: int
    trained: int
    failed: int
    backend: str
    wall_s: float
    controls: dict[str, dict[str, float]] = field(default_factory=dict)
