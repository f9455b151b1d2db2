"""``bayesgeom ablate RUN_DIR``: Paper I's head and layer ablations of a wind-tunnel model
(spec §1.9), each beside the clean model and a mean-ablation control; optionally the model
retrained with attention removed from its top layers, beside its control."""

from ..kit.experiment import Experiment
from .report import format_summary
from .run import AblationsConfig, run_experiment

EXPERIMENTS = (Experiment(
    "ablate", "head and layer ablations of a wind-tunnel model (and the top-attention retrain)",
    AblationsConfig, run_experiment, format_summary),)

__all__ = ["EXPERIMENTS", "AblationsConfig", "run_experiment"]
