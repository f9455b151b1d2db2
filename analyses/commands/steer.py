"""``bayesgeom steer``: causal tests of the entropy axis against random directions."""

from __future__ import annotations

import argparse

from analyses.steering import SteerConfig, run_steer
from analyses.steering_report import format_summary

from .output import register_experiment


def register(sub: argparse._SubParsersAction, parent: argparse.ArgumentParser) -> None:
    register_experiment(sub, parent, "steer",
                        "cut / keep / shift the entropy axis vs random directions", SteerConfig,
                        run_steer, format_summary)
