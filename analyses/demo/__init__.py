"""``bayesgeom demo``: the main job -- train, compare, SULA, steer -- and one offline report."""

from typing import TYPE_CHECKING

from ...records.lazy import lazy_exports
from ..kit.experiment import Experiment

if TYPE_CHECKING:
    from .config import DemoConfig
    from .result import DemoResult
    from .run import run_demo

EXPERIMENTS = (Experiment.in_package(
    __name__, "demo", "the main job: train, evaluate, compare, steer and report"),)

__all__ = ["EXPERIMENTS", "DemoConfig", "DemoResult", "run_demo"]
#: each name is imported on first use (:mod:`records.lazy`): listing the commands imports no torch
__getattr__ = lazy_exports(__name__)
