"""``bayesgeom extrapolate``: positional schemes trained at L on the long-context tunnel,
evaluated at L × m."""

from ..kit.experiment import Experiment, package_exports

EXPERIMENTS = (Experiment.in_package(
    __name__, "extrapolate",
    "train each positional scheme at length L on long_recall and evaluate at "
    "L x m (accuracy, calibration, extrapolation ratio)",
    "ExtrapolationConfig", "run_extrapolation"),)

#: the package's names, each imported on first use (listing the commands imports no torch)
EXPORTS = {"ExtrapolationConfig": "config", "ExtrapolationResult": "result",
           "run_extrapolation": "run"}
__all__, __getattr__ = package_exports(__name__, EXPORTS)
