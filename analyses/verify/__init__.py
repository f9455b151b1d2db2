"""``bayesgeom verify``: a model's attention (the headline) and output calibration against a
task's exact posterior."""

from ..kit.experiment import Experiment, Later, lazy_exports

EXPERIMENTS = (Experiment(
    "verify", "Bayesian consistency: attention vs the exact posterior per head (headline), "
    "output calibration beside it, with controls",
    config=Later(f"{__name__}.config", "ConsistencyConfig"),
    run=Later(f"{__name__}.run", "run_consistency"),
    summary=Later(f"{__name__}.report", "format_summary")),)

#: the package's names, each imported on first use (listing the commands imports no torch)
EXPORTS = {"ConsistencyConfig": "config", "ConsistencyResult": "result", "run_consistency": "run"}
__all__ = ["EXPERIMENTS", *EXPORTS]
__getattr__ = lazy_exports(__name__, EXPORTS)
