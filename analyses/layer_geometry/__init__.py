"""``bayesgeom layer-geometry``: per-layer residual geometry of a wind-tunnel model (PCA,
|corr(PC, H)|, linear R² of H, argmax-posterior silhouette) beside its controls."""

from ..kit.experiment import Experiment, package_exports

EXPERIMENTS = (Experiment.in_package(
    __name__, "layer-geometry", "per-layer resid_post geometry of a wind-tunnel model (any "
    "architecture) against the exact posterior, with controls",
    "LayerGeometryConfig", "run_layer_geometry"),)

#: the package's names, each imported on first use (listing the commands imports no torch)
EXPORTS = {"LayerGeometryConfig": "config", "LayerGeometryResult": "result",
           "run_layer_geometry": "run"}
__all__, __getattr__ = package_exports(__name__, EXPORTS)
