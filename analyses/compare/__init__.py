"""``bayesgeom compare``: the same geometry metrics on several models, side by side."""

from ..geometry import GeometryConfig
from ..kit.experiment import Experiment
from .report import format_summary
from .result import CompareResult
from .run import CompareConfig, run_compare

EXPERIMENTS = (Experiment(
    "compare", "side-by-side geometry of several models (small vs large)", CompareConfig,
    run_compare, format_summary, nested={"geometry": (GeometryConfig, ("model", "out"))}),)

__all__ = ["EXPERIMENTS", "CompareConfig", "CompareResult", "run_compare"]
