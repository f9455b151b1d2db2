"""The typed result of ``bayesgeom frame-precision`` (its ``summary.json``) and the metric names
the run and the report share."""

from __future__ import annotations

from dataclasses import dataclass

FRAME, PRECISION, CONTROL = "frame", "precision", "control"
PRECISION_METRIC = "log10_entropy_mae_bits"


PRECISION_METRICS = ("entropy_mae_bits", PRECISION_METRIC, "vm_pc1", "vm_linear_r2",
                     "vm_abs_corr_pc1")


#: metrics measured per layer, with a whole-model row (layer empty: the mean over layers)
PER_LAYER = ("js_to_final_bits", "attn_mass_feasible", "attn_mass_eliminated")


@dataclass
class FramePrecisionResult:
    """``summary.json``: plateau steps (None: no finite value), whole-model values at step 0
    and at the final step, and the claim with its two steps."""

    run_dir: str
    task: str
    arch: str
    n_layers: int
    steps: list[int]
    final_step: int
    n: int
    n_mae: int
    seed: int
    tolerance: float
    plateau_definition: str
    mae_definition: str
    attn_mass_metric: str
    frame_metrics: list[str]
    precision_metric: str
    plateau_steps: dict[str, int | None]
    init_values: dict[str, float]
    final_values: dict[str, float]
    frame_plateau_step: int | None
    precision_plateau_step: int | None
    frame_before_precision: bool
    frame_before_each_precision_metric: dict[str, bool]
    key_abs_cos_gaussian: float
    wall_s: float
