"""The typed result of ``bayesgeom demo``: its ``summary.json`` is the serialisation of it
(:func:`records.write_result`)."""

from __future__ import annotations

from dataclasses import dataclass, field

from ..compare.result import CompareResult
from ..steer.result import SteerResult
from ..sula.result import SulaResult


@dataclass(frozen=True)
class TrainRow:
    """One wind-tunnel model, evaluated against the exact posterior (bits)."""

    arch: str
    params: int
    steps: int
    wall_s: float
    entropy_mae_bits: float
    entropy_mae_curve_bits: float
    kl_bits: float
    tvd: float
    accuracy: float


@dataclass
class DemoResult:
    """The demo: the bijection race (``windtunnel``: transformer and MLP baselines, task
    ``task`` with ``V`` hypotheses), the HMM transformer (``hmm``) whose geometry and steering
    (``steer_windtunnel``) the demo measures, the comparison, SULA and the LLM's steering."""

    task: str
    V: int
    windtunnel: list[TrainRow]
    hmm: TrainRow
    prompt_sets: list[str]
    compare: CompareResult
    sula: SulaResult
    steer_llm: SteerResult
    steer_windtunnel: SteerResult
    timings_s: dict[str, float] = field(default_factory=dict)
    quick: bool = False


