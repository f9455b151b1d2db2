"""The typed result of ``bayesgeom layer-geometry`` (:mod:`analyses.layer_geometry.run`): what
``summary.json`` holds, read back with :func:`records.read_result`."""

from __future__ import annotations

from dataclasses import dataclass, field

CONDITIONS = ("trained", "random_init", "position_only", "shuffled_target")
#: the per-layer metrics of every condition but ``shuffled_target`` (which has the last two)
METRICS = ("pc1_ratio", "pc2_ratio", "dim90", "max_abs_corr_pc_h", "max_corr_pc",
           "linear_r2_h", "silhouette_argmax")
#: Paper I v3 (spec §1.7), HMM, final layer: linear R² of H (Mamba: layer 9) and PC1 share
PAPER_HMM = {"mamba": {"linear_r2_h": 0.40, "pc1_ratio": 0.219},
             "lstm": {"linear_r2_h": 0.004, "pc1_ratio": 0.923}}


@dataclass
class LayerMetrics:
    """One representation's numbers (:mod:`analyses.layer_geometry.run`). Ratios are fractions
    of the total variance; ``max_corr_pc`` is 1-based (0: no finite correlation);
    ``*_shuffled``: the same with H / the labels permuted."""

    layer: int
    pc1_ratio: float
    pc2_ratio: float
    dim90: int
    max_abs_corr_pc_h: float
    max_corr_pc: int
    linear_r2_h: float
    silhouette_argmax: float
    linear_r2_h_shuffled: float
    silhouette_argmax_shuffled: float


@dataclass
class ConditionGeometry:
    """Per-layer metrics of one representation source; ``entropy_mae_bits``: mean |H_model −
    H_Bayes| over the rows (bits; None for position only)."""

    source: str
    layers: list[LayerMetrics]
    entropy_mae_bits: float | None = None


@dataclass
class LayerGeometryResult:
    """What ``summary.json`` holds. ``n_rows`` = sequences × prediction positions."""

    model: str
    task: str
    arch: str
    steps: int | None
    params: int
    n_layers: int
    d_model: int
    n_sequences: int
    n_positions: int
    n_rows: int
    n_states: int
    seed: int
    twin_seed: int
    silhouette_pcs: int
    silhouette_samples: int
    conditions: dict[str, ConditionGeometry]
    paper_hmm: dict[str, dict[str, float]] = field(default_factory=lambda: PAPER_HMM)
    wall_s: float = 0.0
