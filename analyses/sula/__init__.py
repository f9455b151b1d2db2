"""``bayesgeom sula``: in-context Bayesian calibration of a text model, with three controls."""

from typing import TYPE_CHECKING

from ...records.lazy import lazy_exports
from ..kit.experiment import Experiment

if TYPE_CHECKING:
    from .config import SulaConfig
    from .result import SulaResult
    from .run import run_sula

EXPERIMENTS = (Experiment.in_package(
    __name__, "sula", "in-context Bayesian calibration (SULA) with its controls"),)

__all__ = ["EXPERIMENTS", "SulaConfig", "SulaResult", "run_sula"]
#: each name is imported on first use (:mod:`records.lazy`): listing the commands imports no torch
__getattr__ = lazy_exports(__name__)
