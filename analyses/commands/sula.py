"""``bayesgeom sula``: in-context Bayesian calibration of a text model, with three controls."""

from __future__ import annotations

import argparse

from analyses.options import add_options, config_from_args
from analyses.sula import SulaConfig, run_sula
from analyses.sula_report import format_summary

from .output import emit


def register(sub: argparse._SubParsersAction, parent: argparse.ArgumentParser) -> None:
    p = sub.add_parser("sula", parents=[parent],
                       help="in-context Bayesian calibration (SULA) with its controls")
    add_options(p, SulaConfig)
    p.set_defaults(run=run)


def run(ns: argparse.Namespace) -> int:
    cfg = config_from_args(SulaConfig, ns)
    return emit(run_sula(cfg), ns, format_summary, cfg.out / "report.html")
