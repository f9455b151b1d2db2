"""``bayesgeom lens``: the logit lens and a Bayes lens (affine translators fitted to the exact
posterior) on every layer, against the random-init twin and position alone."""

from typing import TYPE_CHECKING

from ...records.lazy import lazy_exports
from ..kit.experiment import Experiment

if TYPE_CHECKING:
    from .config import LensConfig
    from .result import LensResult, LensScore
    from .run import run_lens

EXPERIMENTS = (Experiment.in_package(
    __name__, "lens", "per-layer logit lens and Bayes lens (translators fitted to the exact "
    "posterior) of a wind tunnel or, on SULA prompts, a text model, with the twin and "
    "position alone"),)

__all__ = ["EXPERIMENTS", "LensConfig", "LensResult", "LensScore", "run_lens"]
#: each name is imported on first use (:mod:`records.lazy`): listing the commands imports no torch
__getattr__ = lazy_exports(__name__)
