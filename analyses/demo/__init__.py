"""``bayesgeom demo``: the main job -- train, compare, SULA, steer -- and one offline report."""

from ..kit.experiment import Experiment
from .report import format_summary
from .result import DemoResult
from .run import DemoConfig, run_demo

EXPERIMENTS = (Experiment(
    "demo", "the main job: train, evaluate, compare, steer and report", DemoConfig, run_demo,
    format_summary),)

__all__ = ["EXPERIMENTS", "DemoConfig", "DemoResult", "run_demo"]
