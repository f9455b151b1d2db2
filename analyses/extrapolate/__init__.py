"""``bayesgeom extrapolate``: positional schemes trained at L on the long-context tunnel,
evaluated at L × m."""

from typing import TYPE_CHECKING

from ...records.lazy import lazy_exports
from ..kit.experiment import Experiment

if TYPE_CHECKING:
    from .config import ExtrapolateConfig
    from .result import ExtrapolateResult
    from .run import run_extrapolate

EXPERIMENTS = (Experiment.in_package(
    __name__, "extrapolate",
    "train each positional scheme at length L on long_recall and evaluate at "
    "L x m (accuracy, calibration, extrapolation ratio)"),)

__all__ = ["EXPERIMENTS", "ExtrapolateConfig", "ExtrapolateResult", "run_extrapolate"]
#: each name is imported on first use (:mod:`records.lazy`): listing the commands imports no torch
__getattr__ = lazy_exports(__name__)
