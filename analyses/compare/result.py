"""The typed result of ``bayesgeom compare``: its ``summary.json`` is the serialisation of it
(:func:`records.write_result`)."""

from __future__ import annotations

from dataclasses import dataclass, field

from ...windtunnel.learned import LearnedCheck
from ..geometry.result import GeometryResult


@dataclass(frozen=True)
class ComparedModel:
    model: str
    prompt_sets: list[str]
    n_layers: int
    layer: int
    run_dir: str


@dataclass
class CompareResult:
    """``metrics``: label -> ``"<prompt set or model>.<metric>"`` -> value; ``results``: each
    model's geometry result (not serialised: it is in ``run_dir``)."""

    labels: list[str]
    models: dict[str, ComparedModel]
    metrics: dict[str, dict[str, float]]
    reused: list[str]
    wall_s: float
    #: label -> a wind tunnel's learned check (its rows' verdicts stand behind it)
    learned: dict[str, LearnedCheck] = field(default_factory=dict)
    results: dict[str, GeometryResult] = field(default_factory=dict,
                                               metadata={"serialise": False})
