"""``bayesgeom monitor``: the monitoring checklist of one model as a pass/fail table, every
threshold an option and printed, each check beside its control."""

from ..kit.experiment import Experiment, package_exports

EXPERIMENTS = (Experiment.in_package(
    __name__, "monitor",
    "the monitoring checklist (key orthogonality, coverage, domain separation, "
    "output posterior KL, extrapolation, convergence) as a pass/fail table with configurable "
    "thresholds",
    "MonitorConfig", "run_monitor"),)

#: the package's names, each imported on first use (listing the commands imports no torch)
EXPORTS = {"MonitorConfig": "config", "MonitorResult": "result", "run_monitor": "run"}
__all__, __getattr__ = package_exports(__name__, EXPORTS)
