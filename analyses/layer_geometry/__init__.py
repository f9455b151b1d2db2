"""``bayesgeom layer-geometry``: per-layer residual geometry of a wind-tunnel model (PCA,
|corr(PC, H)|, linear R² of H, argmax-posterior silhouette) beside its controls."""

from ..kit.experiment import Experiment
from .report import format_summary
from .result import LayerGeometryResult
from .run import LayerGeometryConfig, run_layer_geometry

EXPERIMENTS = (Experiment(
    "layer-geometry", "per-layer resid_post geometry of a wind-tunnel model (any "
    "architecture) against the exact posterior, with controls", LayerGeometryConfig,
    run_layer_geometry, format_summary),)

__all__ = ["EXPERIMENTS", "LayerGeometryConfig", "LayerGeometryResult", "run_layer_geometry"]
