"""``bayesgeom ablate RUN_DIR``: Paper I's head and layer ablations of a wind-tunnel model
(spec §1.9), each beside the clean model and a mean-ablation control; optionally the model
retrained with attention removed from its top layers, beside its control."""

from __future__ import annotations

import argparse

from analyses.ablations import AblationsConfig, run_experiment
from analyses.ablations_report import format_summary

from .output import register_experiment


def register(sub: argparse._SubParsersAction, parent: argparse.ArgumentParser) -> None:
    register_experiment(sub, parent, "ablate",
                        "head and layer ablations of a wind-tunnel model (and the top-attention "
                        "retrain)", AblationsConfig, run_experiment, format_summary)
