"""``bayesgeom detect``: the key frame of every head (orthogonality, dimension utilisation)
beside the random-init twin and the chance level."""

from ..kit.experiment import Experiment
from .report import format_summary
from .result import DetectResult, HeadFrame
from .run import DetectConfig, run_detect

EXPERIMENTS = (Experiment(
    "detect", "key-frame orthogonality and dimension utilisation of every head, with the "
    "random-init baseline", DetectConfig, run_detect, format_summary),)

__all__ = ["EXPERIMENTS", "DetectConfig", "DetectResult", "HeadFrame", "run_detect"]
