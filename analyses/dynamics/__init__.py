"""``bayesgeom dynamics``: Paper II, one experiment folder each -- ``verify`` (:mod:`.verify`:
the gradient identities in every head of a model against autograd), ``em-vs-sgd``
(:mod:`.em_vs_sgd`: the sticky Markov-chain training comparison) -- and the training-dynamics
monitor of ``windtunnel train --monitor-every`` (:mod:`.monitor`)."""

from ..kit.experiment import package_exports
from . import em_vs_sgd, verify

#: the group's commands, in the order ``bayesgeom dynamics --help`` lists them
EXPERIMENTS = (*verify.EXPERIMENTS, *em_vs_sgd.EXPERIMENTS)

#: the package's names, each imported on first use (listing the commands imports no torch)
EXPORTS = {"EmVsSgdConfig": "em_vs_sgd.config", "DynamicsVerifyConfig": "verify.config",
           "run_em_vs_sgd": "em_vs_sgd.run", "run_dynamics_verify": "verify.run",
           "DynamicsMonitor": "monitor.run"}
__all__, __getattr__ = package_exports(__name__, EXPORTS)
