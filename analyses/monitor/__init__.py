"""``bayesgeom monitor``: the monitoring checklist of one model as a pass/fail table, every
threshold an option and printed, each check beside its control."""

from ..kit.experiment import Experiment, Later, lazy_exports

EXPERIMENTS = (Experiment(
    "monitor", "the monitoring checklist (key orthogonality, coverage, domain separation, "
    "output posterior KL, extrapolation, convergence) as a pass/fail table with configurable "
    "thresholds",
    config=Later(f"{__name__}.config", "MonitorConfig"),
    run=Later(f"{__name__}.run", "run_monitor"),
    summary=Later(f"{__name__}.report", "format_summary")),)

#: the package's names, each imported on first use (listing the commands imports no torch)
EXPORTS = {"MonitorConfig": "config", "MonitorResult": "result", "run_monitor": "run"}
__all__ = ["EXPERIMENTS", *EXPORTS]
__getattr__ = lazy_exports(__name__, EXPORTS)
