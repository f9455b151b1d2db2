"""``bayesgeom sula``: in-context Bayesian calibration of a text model, with three controls."""

from ..kit.experiment import Experiment
from .report import format_summary
from .result import SulaResult
from .run import SulaConfig, run_sula

EXPERIMENTS = (Experiment(
    "sula", "in-context Bayesian calibration (SULA) with its controls", SulaConfig, run_sula,
    format_summary),)

__all__ = ["EXPERIMENTS", "SulaConfig", "SulaResult", "run_sula"]
