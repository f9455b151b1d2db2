"""The typed result of a geometry run; ``summary.json`` is its serialisation (:mod:`records`).

Every number the run measures is also a :class:`MetricRow` of ``metrics`` (``table.parquet``
is that list as a table): the long form that ``compare`` and the reports read generically, so a
new measure shows up there without edits. The headline fields (Paper III's Table 1 at the
table layer, key orthogonality, criteria) are typed fields of their own.
"""

from __future__ import annotations

import math
from dataclasses import asdict, dataclass, field

import pandas as pd

from ...interp.model import ModelInfo
from ...probes import Interval, RandomBaseline
from ...windtunnel.learned import LearnedCheck
from ..kit.shard_options import ShardingInfo

NAN = math.nan


@dataclass(frozen=True)
class MetricRow:
    """One measured number: ``prompt_set`` None for a model-level (weights) measure, ``layer``
    None for a set-level one; ``target`` names the entropy it is measured against, if any;
    ``low``/``high`` a 95 % interval where there is one; ``reference`` says whose number it is:
    ``"model"`` (the model analysed), ``"random_init"`` (the same analysis on its
    random-initialisation twin, :func:`interp.random_init_twin`) or ``"position"`` (a
    position-only predictor in place of the activations)."""

    prompt_set: str | None
    layer: int | None
    metric: str
    target: str | None
    value: float
    low: float = NAN
    high: float = NAN
    reference: str = "model"


#: the ``reference`` values of :class:`MetricRow`, in display order
REFERENCES = ("model", "random_init", "position")


def metrics_table(rows: list[MetricRow]) -> pd.DataFrame:
    """The tidy table of ``rows`` (columns as :class:`MetricRow`; ``layer`` nullable int)."""
    cols = ["prompt_set", "layer", "metric", "target", "value", "low", "high", "reference"]
    df = pd.DataFrame([r.__dict__ for r in rows], columns=cols)
    df["layer"] = df["layer"].astype("Int64")
    return df


def abs_interval(lo: float, hi: float) -> tuple[float, float]:
    """The interval of |x| implied by an interval (lo, hi) of x."""
    if lo <= 0 <= hi:
        return 0.0, max(abs(lo), abs(hi))
    return min(abs(lo), abs(hi)), max(abs(lo), abs(hi))


@dataclass(frozen=True)
class Rho(Interval):
    """Spearman ρ(PC1, target) with its bootstrap interval, and |ρ| (PC1's sign is arbitrary)."""

    abs: float = NAN

    @classmethod
    def of(cls, iv: Interval) -> Rho:
        return cls(**asdict(iv), abs=abs(iv.estimate))


@dataclass(frozen=True)
class PositionControl:
    """What position alone gives for one entropy ``target`` of a prompt set (:mod:`probes.
    position_control`): the cross-validated ridge R² of the target from the position design,
    |Spearman ρ(position, target)|, and at the Table-1 layer the partial |ρ(PC1, target |
    position)| and the probe R² of the target's position residual from the values."""

    target: str
    design: str
    n_positions: int
    probe_r2: float
    abs_rho: float
    partial_abs_rho_pc1: float
    probe_r2_beyond_position: float


@dataclass(frozen=True)
class LayerR2:
    layer: int
    r2: float


@dataclass(frozen=True)
class LayerEntropy:
    """Mean attention entropy (bits) at the final token, with its bootstrap interval."""

    layer: int
    entropy_bits: float
    low: float
    high: float


@dataclass(frozen=True)
class Criteria:
    """Paper III's three criteria (None: not evaluated) and how many hold (``label`` "2/3")."""

    value_manifold: bool | None
    key_orthogonality: bool | None
    attention_focusing: bool | None
    key_layer_fraction: float | None
    n_met: int
    evaluated: int
    label: str


@dataclass(frozen=True)
class SetSummary:
    """The headline of one prompt set at the table layer (shares are fractions)."""

    prompt_set: str
    n_prompts: int
    pc1: Interval
    pc1_pc2: Interval
    participation_ratio: float
    dim90: int
    entropy_bits_mean: float
    entropy_bits_range: tuple[float, float]
    rho_pc1_entropy: Rho
    probe_r2: list[LayerR2]
    attention_entropy_bits: list[LayerEntropy] | None
    attention_focusing: Interval | None
    criteria: Criteria
    criteria_met: str
    rho_pc1_bayes_entropy: Rho | None = None
    probe_r2_bayes_entropy: list[LayerR2] | None = None
    position: list[PositionControl] = field(default_factory=list)

    def probe_r2_at(self, layer: int, target: str = "entropy") -> float:
        rows = self.probe_r2 if target == "entropy" else self.probe_r2_bayes_entropy or []
        return next((r.r2 for r in rows if r.layer == layer), NAN)

    def rho(self, target: str = "entropy") -> Rho | None:
        return self.rho_pc1_entropy if target == "entropy" else self.rho_pc1_bayes_entropy

    def position_control(self, target: str = "entropy") -> PositionControl | None:
        return next((p for p in self.position if p.target == target), None)


@dataclass(frozen=True)
class KeyLayer:
    """Weight-based key orthogonality of one layer: mean |cos| over heads and its percentiles."""

    layer: int
    mean_abs_cos: float
    mean_signed_cos: float
    n_heads: int
    p5: float
    p25: float
    p50: float
    p75: float
    p95: float


@dataclass(frozen=True)
class KeyOrthogonality:
    """Paper III's key orthogonality per layer with its chance baselines."""

    per_layer: list[KeyLayer]
    mean_abs_cos: float
    threshold: float
    fraction_layers_below: float
    gaussian_baseline: float
    gaussian_baseline_d_head: float
    random_init_baseline: RandomBaseline
    d_model: int
    d_head: int
    init_mean_abs_cos: float | None = None
    fraction_layers_below_init: float | None = None


@dataclass
class RandomInitBaseline:
    """The same analysis on the model's random-initialisation twin (same class and config, the
    family's own initialisation, ``seed``), on the same prompts and against the same targets."""

    model: str
    seed: int
    key_orthogonality: KeyOrthogonality
    prompt_sets: dict[str, SetSummary]


@dataclass(frozen=True)
class PoolInfo:
    size: int
    scored: int
    reused_scores: bool
    skipped_sources: list[str]
    domains: list[str]


@dataclass
class GeometryResult:
    """One model's geometry run. ``headline`` is the summary of the first prompt set
    (``prompts``), written at the top level of ``summary.json`` (as ``--json`` prints it);
    ``prompt_sets`` holds every set's."""

    model: str
    model_info: ModelInfo
    n_layers: int
    layer: int
    site: str
    layers: list[int]
    prompts: str
    entropy_target: str
    headline: SetSummary = field(metadata={"flatten": True})
    key_orthogonality: KeyOrthogonality = field(kw_only=True)
    prompt_sets: dict[str, SetSummary] = field(kw_only=True)
    pool: PoolInfo = field(kw_only=True)
    random_init: RandomInitBaseline | None = field(default=None, kw_only=True)
    notes: list[str] = field(default_factory=list, kw_only=True)
    metrics: list[MetricRow] = field(default_factory=list, kw_only=True)
    timings_s: dict[str, float] = field(default_factory=dict, kw_only=True)
    wall_s: float = field(default=NAN, kw_only=True)
    #: a wind tunnel's learned check (None for other models): the verdicts stand behind it
    learned: LearnedCheck | None = field(default=None, kw_only=True)
    #: how the forward passes were spread over worker processes (None: this process alone)
    sharding: ShardingInfo | None = field(default=None, kw_only=True)

    def rows(self, metric: str, prompt_set: str | None = None, reference: str = "model",
             ) -> list[MetricRow]:
        return [r for r in self.metrics if r.metric == metric and r.reference == reference
                and (prompt_set is None or r.prompt_set == prompt_set)]
