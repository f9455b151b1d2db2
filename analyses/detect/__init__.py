"""``bayesgeom detect``: the key frame of every head (orthogonality 1 − mean |cos|, beside it
isotropy and dimension utilisation) with the random-init twin and random vectors."""

from ..kit.experiment import Experiment
from .report import format_summary
from .result import DetectResult, HeadFrame
from .run import DetectConfig, run_detect

EXPERIMENTS = (Experiment(
    "detect", "key-frame orthogonality (1 − mean |cos|, Paper I) of every head, beside "
    "isotropy and utilisation, with the random-init twin and random vectors",
    DetectConfig, run_detect, format_summary),)

__all__ = ["EXPERIMENTS", "DetectConfig", "DetectResult", "HeadFrame", "run_detect"]
