"""``bayesgeom frame-precision RUN_DIR``: does the attention frame settle before the precision
of the posterior? (spec §1.9; :mod:`analyses.frame_precision.run`)."""

from ..kit.experiment import Experiment, Later, lazy_exports

EXPERIMENTS = (Experiment(
    "frame-precision", "frame (attention to the final model, key orthogonality, attention "
    "mass) against precision (MAE, value manifold) over dense checkpoints",
    config=Later(f"{__name__}.config", "FramePrecisionConfig"),
    run=Later(f"{__name__}.run", "run_frame_precision"),
    summary=Later(f"{__name__}.report", "format_summary")),)

#: the package's names, each imported on first use (listing the commands imports no torch)
EXPORTS = {"FramePrecisionConfig": "config", "run_frame_precision": "run"}
__all__ = ["EXPERIMENTS", *EXPORTS]
__getattr__ = lazy_exports(__name__, EXPORTS)
