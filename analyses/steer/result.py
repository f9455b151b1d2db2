"""The typed result of ``bayesgeom steer``: its ``summary.json`` is the serialisation of it
(:func:`records.write_result`)."""

from __future__ import annotations

from dataclasses import dataclass, field, fields

import numpy as np

from ...infotheory import Calibration
from ...interp.model import ModelInfo
from ...probes.effective_number import EffectiveNumber
from ...probes.energy_controls import ENERGY_TOLERANCE
from ...windtunnel.learned import LearnedCheck


@dataclass(frozen=True)
class EffectStat:
    """The axis effect on one metric against its control directions (one row of
    ``effects.parquet``, :mod:`analyses.steer.stats`): the null's mean and spread, the
    permutation p (``at_floor``: p = 1/(n_null + 1), nothing smaller is attainable), its Holm
    adjustments over all tests (``p_holm``) and over the primary family (``p_holm_primary``,
    NaN off it), ``n_reached`` controls at least as extreme as the axis and ``n_reached_max``,
    the most with which the primary verdict would still stand (−1: none); the z-score with its
    *parametric* p (``p_z``, ``p_z_holm_primary``; NaN where the controls' effects fail the
    normality check, ``shapiro_p``, and ``parametric_withheld`` says why); the effective
    number of the controls' effects (``n_effective``; ``n_effective_independent``: what
    effects sharing nothing give) and the independent draws the null rests on (``n_draws``);
    whether the test is the condition's ``primary`` one and survives (``survives``:
    p_holm_primary ≤ 0.05; ``survives_parametric``: p_z_holm_primary ≤ 0.05), or why it gets
    no verdict (``withheld``); the energy (fraction of mean ‖x‖²) the axis edit and the
    controls (mean) moved, and control / axis over controls and layers
    (``energy_ratio_min``/``_max``)."""

    axis: float
    null_mean: float
    p: float
    z: float
    n_null: int = 0
    at_floor: bool = False
    p_holm: float = float("nan")
    p_z: float = float("nan")
    primary: bool = False
    p_holm_primary: float = float("nan")
    p_z_holm_primary: float = float("nan")
    survives: bool = False
    survives_parametric: bool = False
    energy_axis: float = float("nan")
    energy_null: float = float("nan")
    null_std: float = float("nan")
    energy_ratio_min: float = float("nan")
    energy_ratio_max: float = float("nan")
    shapiro_p: float = float("nan")
    parametric_withheld: str = ""
    n_effective: float = float("nan")
    n_effective_independent: float = float("nan")
    n_draws: float = float("nan")
    n_reached: int = -1
    n_reached_max: int = -1
    withheld: str = ""

    @classmethod
    def of(cls, row: dict) -> EffectStat:
        """From an ``effects.parquet`` record."""
        flags = ("at_floor", "primary", "survives", "survives_parametric")
        ints = ("n_null", "n_reached", "n_reached_max")
        texts = ("parametric_withheld", "withheld")
        return cls(**{f.name: (bool(row[f.name]) if f.name in flags else
                               int(row[f.name]) if f.name in ints else
                               str(row[f.name]) if f.name in texts else float(row[f.name]))
                      for f in fields(cls) if f.name in row})


@dataclass(frozen=True)
class ControlSet:
    """A layer's control directions r (:mod:`analyses.steer.nulls`): the energy each carries
    where the edits are applied, rᵀMr / uᵀMu over every edited position of the clean pass (u:
    the edit direction; min, median, max: 1 for the energy null, so a cut or keep-only along a
    control removes what the axis' removes); ``method`` that drew them ("independent",
    "orthonormal", "unmatched" with its ``reason``, or the null's name) and whether they are
    ``independent`` draws; ``mean_abs_cos`` between controls and the participation ratios of
    their Gram matrix (``n_effective_euclidean``) and energy-weighted Gram
    (``n_effective_energy``): how spread the *directions* are, not how many independent
    effects they have (that is :attr:`EffectStat.n_effective`); ``reach_min``/``reach_max``:
    the least and most energy a direction orthogonal to u carries, over uᵀMu (a matched
    control exists iff reach_min ≤ 1 ≤ reach_max), and ``orthogonal``: how many mutually
    orthogonal ones can carry it (NaN/0 for the other nulls)."""

    energy_ratio_min: float
    energy_ratio_median: float
    energy_ratio_max: float
    mean_abs_cos: float
    n_effective_euclidean: float
    n_effective_energy: float
    method: str
    reason: str = ""
    independent: bool = True
    reach_min: float = float("nan")
    reach_max: float = float("nan")
    orthogonal: int = 0

    @classmethod
    def of(cls, ratios: object, eff: EffectiveNumber, method: str, reason: str = "",
           independent: bool = True, reach: tuple[float, float] = (float("nan"), float("nan")),
           orthogonal: int = 0) -> ControlSet:
        r = np.asarray(ratios, dtype=np.float64)
        return cls(float(r.min()), float(np.median(r)), float(r.max()), eff.mean_abs_cos,
                   eff.euclidean, eff.energy, method, reason, independent, float(reach[0]),
                   float(reach[1]), int(orthogonal))

    @property
    def matched(self) -> bool:
        """Whether every control carries the axis' energy (within the tolerance)."""
        return bool(self.energy_ratio_min >= 1 - ENERGY_TOLERANCE
                    and self.energy_ratio_max <= 1 + ENERGY_TOLERANCE)


@dataclass(frozen=True)
class AxisInfo:
    """A layer's fitted axis; ``sigma_raw``: std of x·u along the edit direction (the unit of a
    shift)."""

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
    """The clean pass; ``axis_corr``/``axis_proj_corr`` per layer (str): corr(x·u, H) and
    Paper III's read-out corr(axis.project(x), H)."""

    mae: float
    corr: float
    kl_bayes: float
    h_model: float
    axis_corr: dict[str, float]
    per_group: dict[str, Calibration]
    axis_proj_corr: dict[str, float] = field(default_factory=dict)


@dataclass
class SteerResult:
    """``headline``: condition -> effect ("total", "norm_frozen", "direct_path") -> metric ->
    :class:`EffectStat`. ``null``/``edit_space``: the control directions and edit direction
    (:mod:`analyses.steer.nulls`), ``controls`` per layer (their variance ratio to the axis
    and spread); ``vocabulary``: what the next-token metrics read ("hypotheses" for a wind
    tunnel, else "full"); ``survivors``: conditions whose ``primary`` test survives Holm over
    the primary family (permutation p), ``survivors_parametric``: the same with the
    parametric p where the controls' effects pass the normality check; ``controls_adequate``:
    every layer's controls carry the axis' energy and every primary test rests on enough
    independent draws (False: some verdicts are withheld, each condition's ``withheld``
    says why); ``verdict_withheld``: every primary verdict is; ``notes``: plain statements
    of the run's confounds (e.g. an exact entropy that is a function of position)."""

    model: str
    model_info: ModelInfo
    task: str
    n_prompts: int
    group_name: str
    layers: list[int]
    sites: list[str]
    positions: str
    n_random: int
    norm_frozen: bool
    direct_path: bool
    null: str
    edit_space: str
    vocabulary: str
    fingerprint: str
    resume: Resume
    axes: dict[str, AxisInfo]
    controls: dict[str, ControlSet]
    clean: CleanScores
    conditions: list[str]
    headline: dict[str, dict[str, dict[str, EffectStat]]]
    primary: str
    survivors: list[str]
    survivors_parametric: list[str]
    wall_s: float
    clean_pass_s: float
    reused_conditions: int
    controls_adequate: bool = True
    notes: list[str] = field(default_factory=list)
    #: the fewest controls with which the primary family could survive Holm (its permutation
    #: floor 1/(n + 1) below 0.05/m), and whether every primary verdict was withheld
    controls_needed: int = 0
    verdict_withheld: bool = False
    quick: bool = False
    #: a wind tunnel's learned check (None for other models): the verdicts stand behind it
    learned: LearnedCheck | None = None
