"""``bayesgeom monitor``: the monitoring checklist of one model as a pass/fail table, every
threshold an option and printed, each check beside its control."""

from ..kit.experiment import Experiment
from .report import format_summary
from .result import MonitorResult
from .run import MonitorConfig, run_monitor

EXPERIMENTS = (Experiment(
    "monitor", "the monitoring checklist (key orthogonality, coverage, domain separation, "
    "output posterior KL, extrapolation, convergence) as a pass/fail table with configurable "
    "thresholds", MonitorConfig, run_monitor, format_summary),)

__all__ = ["EXPERIMENTS", "MonitorConfig", "MonitorResult", "run_monitor"]
