"""The typed result of ``bayesgeom sula``: its ``summary.json`` is the serialisation of it
(:func:`records.write_result`)."""

from __future__ import annotations

from dataclasses import dataclass

from ...infotheory import Calibration
from ...interp.model import ModelInfo


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
