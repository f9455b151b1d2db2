"""``bayesgeom steer``: causal tests of the entropy axis against random directions."""

from __future__ import annotations

import argparse

from analyses.options import add_options, config_from_args
from analyses.steering import SteerConfig, run_steer
from analyses.steering_report import format_summary

from .output import emit


def register(sub: argparse._SubParsersAction, parent: argparse.ArgumentParser) -> None:
    p = sub.add_parser("steer", parents=[parent],
                       help="cut / keep / shift the entropy axis vs random directions")
    add_options(p, SteerConfig)
    p.set_defaults(run=run)


def run(ns: argparse.Namespace) -> int:
    cfg = config_from_args(SteerConfig, ns)
    return emit(run_steer(cfg), ns, format_summary, cfg.out / "report.html")
