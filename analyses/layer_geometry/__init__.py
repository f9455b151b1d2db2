"""``bayesgeom layer-geometry``: per-layer residual geometry of a wind-tunnel model (PCA,
|corr(PC, H)|, linear R² of H, argmax-posterior silhouette) beside its controls."""

from ..kit.experiment import Experiment, Later, lazy_exports

EXPERIMENTS = (Experiment(
    "layer-geometry", "per-layer resid_post geometry of a wind-tunnel model (any "
    "architecture) against the exact posterior, with controls",
    config=Later(f"{__name__}.config", "LayerGeometryConfig"),
    run=Later(f"{__name__}.run", "run_layer_geometry"),
    summary=Later(f"{__name__}.report", "format_summary")),)

#: the package's names, each imported on first use (listing the commands imports no torch)
EXPORTS = {"LayerGeometryConfig": "config", "LayerGeometryResult": "result",
           "run_layer_geometry": "run"}
__all__ = ["EXPERIMENTS", *EXPORTS]
__getattr__ = lazy_exports(__name__, EXPORTS)
