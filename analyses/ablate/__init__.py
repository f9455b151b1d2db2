"""``bayesgeom ablate RUN_DIR``: Paper I's head and layer ablations of a wind-tunnel model
(spec §1.9), each beside the clean model and a mean-ablation control; optionally the model
retrained with attention removed from its top layers, beside its control."""

from typing import TYPE_CHECKING

from ...records.lazy import lazy_exports
from ..kit.experiment import Experiment

if TYPE_CHECKING:
    from .config import AblateConfig
    from .result import AblateResult
    from .run import run_ablate

EXPERIMENTS = (Experiment.in_package(
    __name__, "ablate",
    "head and layer ablations of a wind-tunnel model (and the top-attention retrain)"),)

__all__ = ["EXPERIMENTS", "AblateConfig", "AblateResult", "run_ablate"]
#: each name is imported on first use (:mod:`records.lazy`): listing the commands imports no torch
__getattr__ = lazy_exports(__name__)
