"""``bayesgeom layer-geometry``: per-layer residual geometry of a wind-tunnel model (PCA,
|corr(PC, H)|, linear R² of H, argmax-posterior silhouette) beside its controls."""

from __future__ import annotations

import argparse

from analyses.layer_geometry import LayerGeometryConfig, run_layer_geometry
from analyses.layer_geometry_report import format_summary

from .output import register_experiment


def register(sub: argparse._SubParsersAction, parent: argparse.ArgumentParser) -> None:
    register_experiment(sub, parent, "layer-geometry",
                        "per-layer resid_post geometry of a wind-tunnel model (any "
                        "architecture) against the exact posterior, with controls",
                        LayerGeometryConfig, run_layer_geometry, format_summary)
