"""``bayesgeom stability``: calibration, accuracy, attention entropy and key orthogonality of a
long_recall model against sequence length, a fitted accuracy decay curve and the critical
length with its bootstrap interval."""

from __future__ import annotations

import argparse

from analyses.stability import StabilityConfig, run_stability
from analyses.stability_report import format_summary

from .output import register_experiment


def register(sub: argparse._SubParsersAction, parent: argparse.ArgumentParser) -> None:
    register_experiment(sub, parent, "stability",
                        "metrics of a long_recall model against sequence length, the accuracy "
                        "decay curve and the critical length with its interval",
                        StabilityConfig, run_stability, format_summary)
