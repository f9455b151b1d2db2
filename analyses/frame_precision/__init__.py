"""``bayesgeom frame-precision RUN_DIR``: does the attention frame settle before the precision
of the posterior? (spec §1.9; :mod:`analyses.frame_precision.run`)."""

from ..kit.experiment import Experiment
from .report import format_summary
from .run import FramePrecisionConfig, run_frame_precision

EXPERIMENTS = (Experiment(
    "frame-precision", "frame (attention to the final model, key orthogonality, attention "
    "mass) against precision (MAE, value manifold) over dense checkpoints",
    FramePrecisionConfig, run_frame_precision, format_summary),)

__all__ = ["EXPERIMENTS", "FramePrecisionConfig", "run_frame_precision"]
