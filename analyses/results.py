"""The typed results of the steering, SULA, compare and demo experiments; each run's
``summary.json`` is the serialisation of one of these (:func:`records.write_result`), and
reports, ``compare`` and ``demo`` read their fields. (A geometry run's result is in
:mod:`analyses.geometry_result`.)
"""

from __future__ import annotations

from dataclasses import dataclass, field

from analyses.geometry_result import GeometryResult
from infotheory import Calibration
from interp.model import ModelInfo


# ---------------------------------------------------------------- steering
@dataclass(frozen=True)
class EffectStat:
    """The axis effect on one metric, its random null's mean, the p-value and z-score."""

    axis: float
    null_mean: float
    p: float
    z: float


@dataclass(frozen=True)
class AxisInfo:
    method: str
    pearson_h_model: float
    spearman_h_model: float
    explained_variance_ratio: float | None
    sigma_raw: float
    dim: int


@dataclass(frozen=True)
class Resume:
    from_layer: int
    used: bool
    clean_rel_error: float | None


@dataclass(frozen=True)
class CleanScores:
    mae: float
    corr: float
    kl_bayes: float
    h_model: float
    axis_corr: dict[str, float]
    per_group: dict[str, Calibration]


@dataclass
class SteerResult:
    """``headline``: condition -> effect ("total", "direct") -> metric -> :class:`EffectStat`."""

    model: str
    model_info: ModelInfo
    task: str
    n_prompts: int
    group_name: str
    layers: list[int]
    sites: list[str]
    positions: str
    n_random: int
    direct: bool
    fingerprint: str
    resume: Resume
    axes: dict[str, AxisInfo]
    clean: CleanScores
    conditions: list[str]
    headline: dict[str, dict[str, dict[str, EffectStat]]]
    wall_s: float
    clean_pass_s: float
    reused_conditions: int


# ---------------------------------------------------------------- SULA
@dataclass(frozen=True)
class SulaCondition:
    """One condition: calibration overall (bits) and per k, label mass, shared-basis PC1."""

    mae: float
    corr: float
    n: int
    h_model: float
    h_bayes: float
    label_mass: float
    per_k: dict[str, Calibration]
    abs_rho_pc1_h_bayes: float
    abs_rho_pc1_h_model: float
    rho_k_pc1: float


@dataclass
class SulaResult:
    model: str
    model_info: ModelInfo
    site: str
    labels: tuple[str, str]
    remap_labels: tuple[str, str]
    label_token_ids: dict[str, int]
    ks: tuple[int, ...]
    n_per_k: int
    alpha: float
    seed: int
    expected_h_bayes_bits: dict[str, float]
    conditions: dict[str, SulaCondition]
    pc_explained_variance_ratio: list[float]
    paper3_mae_bits: dict[str, float]
    reused_conditions: list[str]
    wall_s: float


# ---------------------------------------------------------------- compare
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
    results: dict[str, GeometryResult] = field(default_factory=dict,
                                               metadata={"serialise": False})


# ---------------------------------------------------------------- demo
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
    task: str
    V: int
    windtunnel: list[TrainRow]
    prompt_sets: list[str]
    compare: CompareResult
    sula: SulaResult
    steer_llm: SteerResult
    steer_windtunnel: SteerResult
    timings_s: dict[str, float] = field(default_factory=dict)
    quick: bool = False
