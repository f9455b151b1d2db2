"""``bayesgeom detect``: the key frame of every head (orthogonality 1 − mean |cos|, beside it
isotropy and dimension utilisation) with the random-init twin and random vectors."""

from typing import TYPE_CHECKING

from ...records.lazy import lazy_exports
from ..kit.experiment import Experiment

if TYPE_CHECKING:
    from .config import DetectConfig
    from .result import DetectResult, HeadFrame
    from .run import run_detect

EXPERIMENTS = (Experiment.in_package(
    __name__, "detect", "key-frame orthogonality (1 − mean |cos|, Paper I) of every head, beside "
    "isotropy and utilisation, with the random-init twin and random vectors"),)

__all__ = ["EXPERIMENTS", "DetectConfig", "DetectResult", "HeadFrame", "run_detect"]
#: each name is imported on first use (:mod:`records.lazy`): listing the commands imports no torch
__getattr__ = lazy_exports(__name__)
