"""``bayesgeom dynamics``: Paper II -- ``verify`` (the gradient identities in every head of a
model against autograd), ``em-vs-sgd`` (the sticky Markov-chain training comparison) and the
training-dynamics monitor of ``windtunnel train --monitor-every``."""

from ..kit.experiment import Experiment, Later, lazy_exports

EXPERIMENTS = (
    Experiment("verify", "the routing law, value update and Q/K gradients of every attention "
               "head, predicted and compared with autograd",
               config=Later(f"{__name__}.verify_config", "VerifyConfig"),
               run=Later(f"{__name__}.verify", "run_verify"),
               summary=Later(f"{__name__}.verify_report", "format_summary"), group="dynamics"),
    Experiment("em-vs-sgd", "the sticky Markov chain: the authors' SGD and learning-rate split, "
               "tuned baselines (SGD, per-matrix lrs, Adam) and an EM-like closed-form M-step "
               "with its ablations, over seeds, with paired tests",
               config=Later(f"{__name__}.em_vs_sgd_config", "EmVsSgdConfig"),
               run=Later(f"{__name__}.em_vs_sgd", "run_em_vs_sgd"),
               summary=Later(f"{__name__}.em_vs_sgd_report", "format_summary"),
               group="dynamics"),
)

#: the package's names, each imported on first use (listing the commands imports no torch)
EXPORTS = {"EmVsSgdConfig": "em_vs_sgd_config", "VerifyConfig": "verify_config",
           "run_em_vs_sgd": "em_vs_sgd", "run_verify": "verify"}
__all__ = ["EXPERIMENTS", *EXPORTS]
__getattr__ = lazy_exports(__name__, EXPORTS)
