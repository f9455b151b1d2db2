"""``bayesgeom steer``: causal tests of the entropy axis against control directions."""

from ..kit.experiment import Experiment
from .report import format_summary
from .result import SteerResult
from .run import SteerConfig, run_steer

EXPERIMENTS = (Experiment(
    "steer", "cut / keep / shift the entropy axis vs random directions", SteerConfig,
    run_steer, format_summary),)

__all__ = ["EXPERIMENTS", "SteerConfig", "SteerResult", "run_steer"]
