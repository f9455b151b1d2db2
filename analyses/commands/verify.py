"""``bayesgeom verify``: a model's output and attention against a task's exact posterior."""

from __future__ import annotations

import argparse

from analyses.consistency import ConsistencyConfig, run_consistency
from analyses.consistency_report import format_summary

from .output import register_experiment


def register(sub: argparse._SubParsersAction, parent: argparse.ArgumentParser) -> None:
    register_experiment(sub, parent, "verify",
                        "Bayesian consistency: output vs the exact posterior, and the heads "
                        "that read the hypotheses, with controls", ConsistencyConfig,
                        run_consistency, format_summary)
