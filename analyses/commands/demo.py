"""``bayesgeom demo``: the main job -- train, compare, SULA, steer -- and one offline report."""

from __future__ import annotations

import argparse

from analyses.demo import DemoConfig, run_demo
from analyses.options import add_options, config_from_args

from .output import emit


def register(sub: argparse._SubParsersAction, parent: argparse.ArgumentParser) -> None:
    p = sub.add_parser("demo", parents=[parent],
                       help="the main job: train, evaluate, compare, steer and report")
    add_options(p, DemoConfig)
    p.set_defaults(run=run)


def run(ns: argparse.Namespace) -> int:
    from analyses.demo_report import format_summary

    cfg = config_from_args(DemoConfig, ns)
    result = run_demo(cfg)
    return emit(result, ns, lambda r: format_summary(r, cfg.out), cfg.out / "report.html")
