"""``bayesgeom verify``: a model's attention (the headline) and output calibration against a
task's exact posterior."""

from ..kit.experiment import Experiment
from .report import format_summary
from .result import ConsistencyResult
from .run import ConsistencyConfig, run_consistency

EXPERIMENTS = (Experiment(
    "verify", "Bayesian consistency: attention vs the exact posterior per head (headline), "
    "output calibration beside it, with controls",
    ConsistencyConfig, run_consistency, format_summary),)

__all__ = ["EXPERIMENTS", "ConsistencyConfig", "ConsistencyResult", "run_consistency"]
