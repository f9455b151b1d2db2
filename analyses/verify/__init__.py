"""``bayesgeom verify``: a model's attention (the headline) and output calibration against a
task's exact posterior."""

from typing import TYPE_CHECKING

from ...records.lazy import lazy_exports
from ..kit.experiment import Experiment

if TYPE_CHECKING:
    from .config import VerifyConfig
    from .result import VerifyResult
    from .run import run_verify

EXPERIMENTS = (Experiment.in_package(
    __name__, "verify",
    "Bayesian consistency: attention vs the exact posterior per head (headline, judged "
    "against selection-aware controls), "
    "output calibration beside it, with controls"),)

__all__ = ["EXPERIMENTS", "VerifyConfig", "VerifyResult", "run_verify"]
#: each name is imported on first use (:mod:`records.lazy`): listing the commands imports no torch
__getattr__ = lazy_exports(__name__)
