"""``bayesgeom frame-precision RUN_DIR``: does the attention frame settle before the precision
of the posterior? (spec §1.9; :mod:`analyses.frame_precision`)."""

from __future__ import annotations

import argparse

from analyses.frame_precision import FramePrecisionConfig, run_frame_precision
from analyses.frame_precision_report import format_summary

from .output import register_experiment


def register(sub: argparse._SubParsersAction, parent: argparse.ArgumentParser) -> None:
    register_experiment(sub, parent, "frame-precision",
                        "frame (attention to the final model, key orthogonality, attention "
                        "mass) against precision (MAE, value manifold) over dense checkpoints",
                        FramePrecisionConfig, run_frame_precision, format_summary)
