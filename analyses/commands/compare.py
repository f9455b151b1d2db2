"""``bayesgeom compare``: the same geometry metrics on several models, side by side."""

from __future__ import annotations

import argparse

from analyses.compare import CompareConfig, run_compare
from analyses.compare_report import format_summary
from analyses.geometry import GeometryConfig
from analyses.options import add_options, config_from_args

from .output import emit


def register(sub: argparse._SubParsersAction, parent: argparse.ArgumentParser) -> None:
    p = sub.add_parser("compare", parents=[parent],
                       help="side-by-side geometry of several models (small vs large)")
    add_options(p, CompareConfig)
    add_options(p, GeometryConfig, skip=("model", "out"))
    p.set_defaults(run=run)


def run(ns: argparse.Namespace) -> int:
    cfg = config_from_args(CompareConfig, ns, geometry=config_from_args(GeometryConfig, ns))
    return emit(run_compare(cfg), ns, format_summary, cfg.out / "report.html")
