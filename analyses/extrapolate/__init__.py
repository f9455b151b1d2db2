"""``bayesgeom extrapolate``: positional schemes trained at L on the long-context tunnel,
evaluated at L × m."""

from ..kit.experiment import Experiment
from .report import format_summary
from .result import ExtrapolationResult
from .run import ExtrapolationConfig, run_extrapolation

EXPERIMENTS = (Experiment(
    "extrapolate", "train each positional scheme at length L on long_recall and evaluate at "
    "L x m (accuracy, calibration, extrapolation ratio)", ExtrapolationConfig,
    run_extrapolation, format_summary),)

__all__ = ["EXPERIMENTS", "ExtrapolationConfig", "ExtrapolationResult", "run_extrapolation"]
