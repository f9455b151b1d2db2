"""``bayesgeom extrapolate``: positional schemes trained at L on the long-context tunnel,
evaluated at L × m."""

from ..kit.experiment import Experiment, package_exports

EXPERIMENTS = (Experiment.in_package(
    __name__, "extrapolate",
    "train each positional scheme at length L on long_recall and evaluate at "
    "L x m (accuracy, calibration, extrapolation ratio)",
    "ExtrapolateConfig", "run_extrapolate"),)

#: the package's names, each imported on first use (listing the commands imports no torch)
EXPORTS = {"ExtrapolateConfig": "config", "ExtrapolateResult": "result",
           "run_extrapolate": "run"}
__all__, __getattr__ = package_exports(__name__, EXPORTS)
