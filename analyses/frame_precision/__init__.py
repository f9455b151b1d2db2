"""``bayesgeom frame-precision RUN_DIR``: does the attention frame settle before the precision
of the posterior? (spec §1.9; :mod:`analyses.frame_precision.run`)."""

from ..kit.experiment import Experiment, package_exports

EXPERIMENTS = (Experiment.in_package(
    __name__, "frame-precision",
    "frame (attention to the final model, key orthogonality, attention "
    "mass) against precision (MAE, value manifold) over dense checkpoints",
    "FramePrecisionConfig", "run_frame_precision"),)

#: the package's names, each imported on first use (listing the commands imports no torch)
EXPORTS = {"FramePrecisionConfig": "config", "run_frame_precision": "run"}
__all__, __getattr__ = package_exports(__name__, EXPORTS)
