"""``bayesgeom detect``: the key frame of every head (orthogonality, dimension utilisation)
beside the random-init twin and the chance level."""

from __future__ import annotations

import argparse

from analyses.detect import DetectConfig, run_detect
from analyses.detect_report import format_summary

from .output import register_experiment


def register(sub: argparse._SubParsersAction, parent: argparse.ArgumentParser) -> None:
    register_experiment(sub, parent, "detect",
                        "key-frame orthogonality and dimension utilisation of every head, "
                        "with the random-init baseline", DetectConfig, run_detect,
                        format_summary)
