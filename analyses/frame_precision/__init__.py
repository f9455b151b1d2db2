"""``bayesgeom frame-precision RUN_DIR``: does the attention frame settle before the precision
of the posterior? (spec §1.9; :mod:`analyses.frame_precision.run`)."""

from typing import TYPE_CHECKING

from ...records.lazy import lazy_exports
from ..kit.experiment import Experiment

if TYPE_CHECKING:
    from .config import FramePrecisionConfig
    from .run import run_frame_precision

EXPERIMENTS = (Experiment.in_package(
    __name__, "frame-precision",
    "frame (attention to the final model, key orthogonality, attention "
    "mass) against precision (MAE, value manifold) over dense checkpoints"),)

__all__ = ["EXPERIMENTS", "FramePrecisionConfig", "run_frame_precision"]
#: each name is imported on first use (:mod:`records.lazy`): listing the commands imports no torch
__getattr__ = lazy_exports(__name__)
