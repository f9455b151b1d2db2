"""``bayesgeom extrapolate``: positional schemes trained at L on the long-context tunnel,
evaluated at L × m."""

from ..kit.experiment import Experiment, Later, lazy_exports

EXPERIMENTS = (Experiment(
    "extrapolate", "train each positional scheme at length L on long_recall and evaluate at "
    "L x m (accuracy, calibration, extrapolation ratio)",
    config=Later(f"{__name__}.config", "ExtrapolationConfig"),
    run=Later(f"{__name__}.run", "run_extrapolation"),
    summary=Later(f"{__name__}.report", "format_summary")),)

#: the package's names, each imported on first use (listing the commands imports no torch)
EXPORTS = {"ExtrapolationConfig": "config", "ExtrapolationResult": "result",
           "run_extrapolation": "run"}
__all__ = ["EXPERIMENTS", *EXPORTS]
__getattr__ = lazy_exports(__name__, EXPORTS)
