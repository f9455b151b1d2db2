"""``bayesgeom dynamics``: Paper II, one experiment folder each -- ``verify`` (:mod:`.verify`:
the gradient identities in every head of a model against autograd), ``em-vs-sgd``
(:mod:`.em_vs_sgd`: the sticky Markov-chain training comparison) -- and the training-dynamics
monitor of ``windtunnel train --monitor-every`` (:mod:`.monitor`)."""

from typing import TYPE_CHECKING

from ...records.lazy import lazy_exports
from . import em_vs_sgd, verify

if TYPE_CHECKING:
    from .em_vs_sgd.config import EmVsSgdConfig
    from .em_vs_sgd.run import run_em_vs_sgd
    from .monitor.run import DynamicsMonitor
    from .verify.config import DynamicsVerifyConfig
    from .verify.run import run_dynamics_verify

#: the group's commands, in the order ``bayesgeom dynamics --help`` lists them
EXPERIMENTS = (*verify.EXPERIMENTS, *em_vs_sgd.EXPERIMENTS)

__all__ = [
    "EXPERIMENTS",
    "DynamicsMonitor",
    "DynamicsVerifyConfig",
    "EmVsSgdConfig",
    "run_dynamics_verify",
    "run_em_vs_sgd",
]
#: each name is imported on first use (:mod:`records.lazy`): listing the commands imports no torch
__getattr__ = lazy_exports(__name__)
