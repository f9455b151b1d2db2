"""``bayesgeom geometry``: Paper III value/key/attention geometry of one model."""

from __future__ import annotations

import argparse

from analyses.geometry import GeometryConfig, run_geometry
from analyses.geometry_report import format_summary

from .output import register_experiment


def register(sub: argparse._SubParsersAction, parent: argparse.ArgumentParser) -> None:
    register_experiment(sub, parent, "geometry",
                        "Paper III value/key/attention geometry on real text", GeometryConfig,
                        run_geometry, format_summary)
