"""``bayesgeom demo``: the main job -- train, compare, SULA, steer -- and one offline report."""

from ..kit.experiment import Experiment, package_exports

EXPERIMENTS = (Experiment.in_package(
    __name__, "demo", "the main job: train, evaluate, compare, steer and report",
    "DemoConfig", "run_demo"),)

#: the package's names, each imported on first use (listing the commands imports no torch)
EXPORTS = {"DemoConfig": "config", "DemoResult": "result", "run_demo": "run"}
__all__, __getattr__ = package_exports(__name__, EXPORTS)
