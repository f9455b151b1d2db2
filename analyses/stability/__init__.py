"""``bayesgeom stability``: calibration, accuracy, attention entropy and key orthogonality of a
long_recall model (or passkey retrieval in a text model) against sequence length, a fitted
accuracy decay curve and the critical length."""

from ..kit.experiment import Experiment
from .report import format_summary
from .result import StabilityResult
from .run import StabilityConfig, run_stability

EXPERIMENTS = (Experiment(
    "stability", "metrics of a long_recall model against sequence length, the accuracy decay "
    "curve and the critical length with its interval", StabilityConfig, run_stability,
    format_summary),)

__all__ = ["EXPERIMENTS", "StabilityConfig", "StabilityResult", "run_stability"]
