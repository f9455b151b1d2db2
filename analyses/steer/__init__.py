"""``bayesgeom steer``: causal tests of the entropy axis against control directions."""

from typing import TYPE_CHECKING

from ...records.lazy import lazy_exports
from ..kit.experiment import Experiment

if TYPE_CHECKING:
    from .config import SteerConfig
    from .result import SteerResult
    from .run import run_steer

EXPERIMENTS = (Experiment.in_package(
    __name__, "steer", "cut / keep / shift the entropy axis vs random directions"),)

__all__ = ["EXPERIMENTS", "SteerConfig", "SteerResult", "run_steer"]
#: each name is imported on first use (:mod:`records.lazy`): listing the commands imports no torch
__getattr__ = lazy_exports(__name__)
