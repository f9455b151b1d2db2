"""``bayesgeom sula``: in-context Bayesian calibration of a text model, with three controls."""

from __future__ import annotations

import argparse

from analyses.sula import SulaConfig, run_sula
from analyses.sula_report import format_summary

from .output import register_experiment


def register(sub: argparse._SubParsersAction, parent: argparse.ArgumentParser) -> None:
    register_experiment(sub, parent, "sula",
                        "in-context Bayesian calibration (SULA) with its controls", SulaConfig,
                        run_sula, format_summary)
