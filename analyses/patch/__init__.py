"""``bayesgeom patch``: activation patching scored in bits against the exact posterior, with
attribution patching on the same grid, beside the Bayes-null pairs, an unrelated source and the
random-init twin."""

from typing import TYPE_CHECKING

from ...records.lazy import lazy_exports
from ..kit.experiment import Experiment

if TYPE_CHECKING:
    from .config import PatchConfig
    from .result import PatchingResult
    from .run import run_patch

EXPERIMENTS = (Experiment.in_package(
    __name__, "patch", "where the evidence is stored: activation and attribution patching "
    "scored in bits against the exact posterior, with Bayes-null, unrelated-source and twin "
    "controls"),)

__all__ = ["EXPERIMENTS", "PatchConfig", "PatchingResult", "run_patch"]
#: each name is imported on first use (:mod:`records.lazy`): listing the commands imports no torch
__getattr__ = lazy_exports(__name__)
