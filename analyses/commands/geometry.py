"""``bayesgeom geometry``: Paper III value/key/attention geometry of one model."""

from __future__ import annotations

import argparse

from analyses.geometry import GeometryConfig, run_geometry
from analyses.geometry_report import format_summary
from analyses.options import add_options, config_from_args

from .output import emit


def register(sub: argparse._SubParsersAction, parent: argparse.ArgumentParser) -> None:
    p = sub.add_parser("geometry", parents=[parent],
                       help="Paper III value/key/attention geometry on real text")
    add_options(p, GeometryConfig)
    p.set_defaults(run=run)


def run(ns: argparse.Namespace) -> int:
    cfg = config_from_args(GeometryConfig, ns)
    return emit(run_geometry(cfg), ns, format_summary, cfg.out / "report.html")
