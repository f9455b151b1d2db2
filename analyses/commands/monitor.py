"""``bayesgeom monitor``: the monitoring checklist of one model as a pass/fail table, every
threshold an option and printed, each check beside its control (``analyses.monitor``)."""

from __future__ import annotations

import argparse

from analyses.monitor import MonitorConfig, run_monitor
from analyses.monitor_report import format_summary

from .output import register_experiment


def register(sub: argparse._SubParsersAction, parent: argparse.ArgumentParser) -> None:
    register_experiment(sub, parent, "monitor",
                        "the monitoring checklist (key orthogonality, coverage, domain "
                        "separation, posterior KL, extrapolation, convergence) as a pass/fail "
                        "table with configurable thresholds", MonitorConfig, run_monitor,
                        format_summary)
