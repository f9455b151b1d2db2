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
    ``task`` with ``V`` hypotheses), the HMM transformer (``hmm``, beside ``hmm_controls``)
    whose geometry and steering (``steer_windtunnel``) the demo measures, the comparison, SULA
    and the LLM's steering."""

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
    #: the HMM controls on the HMM transformer's held-out sequences: per-sample entropy MAE
    #: (Paper I, bits) of the history-free filter and of the filter that sees only the last
    #: w observations ("window w"), against the exact filter
    hmm_controls: dict[str, float] = field(default_factory=dict)


