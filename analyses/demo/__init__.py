"""``bayesgeom demo``: the main job -- train, compare, SULA, steer -- and one offline report."""

from ..kit.experiment import Experiment, Later, lazy_exports

EXPERIMENTS = (Experiment(
    "demo", "the main job: train, evaluate, compare, steer and report",
    config=Later(f"{__name__}.config", "DemoConfig"),
    run=Later(f"{__name__}.run", "run_demo"),
    summary=Later(f"{__name__}.report", "format_summary")),)

#: the package's names, each imported on first use (listing the commands imports no torch)
EXPORTS = {"DemoConfig": "config", "DemoResult": "result", "run_demo": "run"}
__all__ = ["EXPERIMENTS", *EXPORTS]
__getattr__ = lazy_exports(__name__, EXPORTS)
