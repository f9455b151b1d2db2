"""``bayesgeom extrapolate``: positional schemes trained at L on the long-context tunnel,
evaluated at L × m."""

from __future__ import annotations

import argparse

from analyses.extrapolation import ExtrapolationConfig, run_extrapolation
from analyses.extrapolation_report import format_summary

from .output import register_experiment


def register(sub: argparse._SubParsersAction, parent: argparse.ArgumentParser) -> None:
    register_experiment(sub, parent, "extrapolate",
                        "train each positional scheme at length L on long_recall and evaluate "
                        "at L x m (accuracy, calibration, extrapolation ratio)",
                        ExtrapolationConfig, run_extrapolation, format_summary)
