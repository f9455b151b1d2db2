"""``bayesgeom layer-geometry``: per-layer residual geometry of a wind-tunnel model (PCA,
|corr(PC, H)|, linear R² of H, argmax-posterior silhouette) beside its controls."""

from typing import TYPE_CHECKING

from ...records.lazy import lazy_exports
from ..kit.experiment import Experiment

if TYPE_CHECKING:
    from .config import LayerGeometryConfig
    from .result import LayerGeometryResult
    from .run import run_layer_geometry

EXPERIMENTS = (Experiment.in_package(
    __name__, "layer-geometry", "per-layer resid_post geometry of a wind-tunnel model (any "
    "architecture) against the exact posterior, with controls"),)

__all__ = ["EXPERIMENTS", "LayerGeometryConfig", "LayerGeometryResult", "run_layer_geometry"]
#: each name is imported on first use (:mod:`records.lazy`): listing the commands imports no torch
__getattr__ = lazy_exports(__name__)
