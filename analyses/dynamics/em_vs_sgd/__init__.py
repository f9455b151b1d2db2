"""``bayesgeom dynamics em-vs-sgd``: the sticky Markov chain trained by the authors' SGD and
learning-rate split, tuned baselines and an EM-like closed-form M-step with its ablations,
over seeds, with paired tests against tuned SGD (:mod:`.run`)."""

from typing import TYPE_CHECKING

from ....records.lazy import lazy_exports
from ...kit.experiment import Experiment

if TYPE_CHECKING:
    from .config import EmVsSgdConfig
    from .result import EmVsSgdResult
    from .run import run_em_vs_sgd

EXPERIMENTS = (Experiment.in_package(
    __name__, "em-vs-sgd", "the sticky Markov chain: the authors' SGD and learning-rate "
    "split, tuned baselines (SGD, per-matrix lrs, Adam) and an EM-like closed-form M-step "
    "with its ablations, over seeds, with paired tests",
    group="dynamics"),)

__all__ = ["EXPERIMENTS", "EmVsSgdConfig", "EmVsSgdResult", "run_em_vs_sgd"]
#: each name is imported on first use (:mod:`records.lazy`): listing the commands imports no torch
__getattr__ = lazy_exports(__name__)
