"""The typed result of ``bayesgeom steer``: its ``summary.json`` is the serialisation of it
(:func:`records.write_result`)."""

from __future__ import annotations

from dataclasses import dataclass, field, fields

import numpy as np

from ...infotheory import Calibration
from ...interp.model import ModelInfo
from ...probes.effective_number import EffectiveNumber


@dataclass(frozen=True)
class EffectStat:
    """The axis effect on one metric against its control directions (one row of
    ``effects.parquet``, :mod:`analyses.steer.stats`): the null's mean, the permutation p
    (``at_floor``: p = 1/(n_null + 1), nothing smaller is attainable), its Holm adjustments over
    all tests (``p_holm``) and over the primary family (``p_holm_primary``, NaN off it), the
    z-score with its *parametric* normal p (``p_z``, ``p_z_holm_primary``), whether the test
    is the condition's ``primary`` one and survives (``survives``: p_holm_primary ≤ 0.05;
    ``survives_parametric``: p_z_holm_primary ≤ 0.05), and the energy (fraction of mean ‖x‖²)
    the axis edit and the controls (mean) moved."""

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

    @classmethod
    def of(cls, row: dict) -> EffectStat:
        """From an ``effects.parquet`` record."""
        flags = ("at_floor", "primary", "survives", "survives_parametric")
        return cls(**{f.name: (bool(row[f.name]) if f.name in flags else
                               int(row[f.name]) if f.name == "n_null" else float(row[f.name]))
                      for f in fields(cls) if f.name in row})


@dataclass(frozen=True)
class ControlSet:
    """A layer's control directions r (:mod:`analyses.steer.nulls`): the energy each carries
    where the edits are applied, rᵀMr / uᵀMu over every edited position of the clean pass (u:
    the edit direction; min, median, max: 1 for a matched energy null, so a cut or keep-only
    along a control removes what the axis' removes); ``method`` that drew them ("matched",
    the fallbacks "top_subspace"/"bottom_subspace" with their ``reason``, or the null's name);
    ``mean_abs_cos`` between controls; the effective number of independent controls
    (:func:`probes.effective_number.effective_number`: ``n_effective`` = the participation ratio
    of their Gram matrix, ``n_effective_energy`` that of the energy-weighted one, beside))."""

    energy_ratio_min: float
    energy_ratio_median: float
    energy_ratio_max: float
    mean_abs_cos: float
    n_effective: float
    n_effective_euclidean: float
    n_effective_energy: float
    method: str
    reason: str = ""

    @classmethod
    def of(cls, ratios: object, eff: EffectiveNumber, method: str, reason: str = ""
           ) -> ControlSet:
        r = np.asarray(ratios, dtype=np.float64)
        return cls(float(r.min()), float(np.median(r)), float(r.max()), eff.mean_abs_cos,
                   eff.value, eff.euclidean, eff.energy, method, reason)


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
    parametric p; ``controls_adequate``: the controls carry the axis' energy and amount to
    enough independent ones (False: every p is not clean, and if they collapse to too few
    independent ones ``verdict_withheld`` is set and neither list holds anything; summaries
    written before this name read True); ``notes``: plain
    statements of the run's confounds (e.g. an exact entropy that is a function of position)."""

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
    #: floor 1/(n + 1) below 0.05/m), and whether every verdict was withheld because the
    #: controls amount to too few independent ones
    controls_needed: int = 0
    verdict_withheld: bool = False
    quick: bool = False
