"""``bayesgeom monitor``: the monitoring checklist of one model as a pass/fail table, every
threshold an option and printed, each check beside its control."""

from typing import TYPE_CHECKING

from ...records.lazy import lazy_exports
from ..kit.experiment import Experiment

if TYPE_CHECKING:
    from .config import MonitorConfig
    from .result import MonitorResult
    from .run import run_monitor

EXPERIMENTS = (Experiment.in_package(
    __name__, "monitor",
    "the monitoring checklist (key orthogonality, coverage, domain separation, "
    "output posterior KL, extrapolation, convergence) as a pass/fail table with configurable "
    "thresholds"),)

__all__ = ["EXPERIMENTS", "MonitorConfig", "MonitorResult", "run_monitor"]
#: each name is imported on first use (:mod:`records.lazy`): listing the commands imports no torch
__getattr__ = lazy_exports(__name__)
