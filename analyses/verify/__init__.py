"""``bayesgeom verify``: a model's output and attention against a task's exact posterior."""

from ..kit.experiment import Experiment
from .report import format_summary
from .result import ConsistencyResult
from .run import ConsistencyConfig, run_consistency

EXPERIMENTS = (Experiment(
    "verify", "Bayesian consistency: output vs the exact posterior, and the heads that read "
    "the hypotheses, with controls", ConsistencyConfig, run_consistency, format_summary),)

__all__ = ["EXPERIMENTS", "ConsistencyConfig", "ConsistencyResult", "run_consistency"]
