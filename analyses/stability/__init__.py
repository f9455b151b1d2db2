"""``bayesgeom stability``: calibration, accuracy, attention entropy and key orthogonality of a
long_recall model (or passkey retrieval in a text model) against sequence length, a fitted
accuracy decay curve and the critical length."""

from typing import TYPE_CHECKING

from ...records.lazy import lazy_exports
from ..kit.experiment import Experiment

if TYPE_CHECKING:
    from .config import StabilityConfig
    from .result import StabilityResult
    from .run import run_stability

EXPERIMENTS = (Experiment.in_package(
    __name__, "stability",
    "metrics of a long_recall model against sequence length, the accuracy decay "
    "curve and the critical length with its interval"),)

__all__ = ["EXPERIMENTS", "StabilityConfig", "StabilityResult", "run_stability"]
#: each name is imported on first use (:mod:`records.lazy`): listing the commands imports no torch
__getattr__ = lazy_exports(__name__)
