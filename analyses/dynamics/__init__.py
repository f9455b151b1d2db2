"""``bayesgeom dynamics``: Paper II -- ``verify`` (the gradient identities in every head of a
model against autograd), ``em-vs-sgd`` (the sticky Markov-chain training comparison) and the
training-dynamics monitor of ``windtunnel train --monitor-every``."""

from ..kit.experiment import Experiment, package_exports

EXPERIMENTS = (
    Experiment.in_package(
        __name__, "verify", "the routing law, value update and Q/K gradients of every "
        "attention head, predicted and compared with autograd", "VerifyConfig", "run_verify",
        modules=("verify_config", "verify", "verify_report"), group="dynamics"),
    Experiment.in_package(
        __name__, "em-vs-sgd", "the sticky Markov chain: the authors' SGD and learning-rate "
        "split, tuned baselines (SGD, per-matrix lrs, Adam) and an EM-like closed-form M-step "
        "with its ablations, over seeds, with paired tests", "EmVsSgdConfig", "run_em_vs_sgd",
        modules=("em_vs_sgd_config", "em_vs_sgd", "em_vs_sgd_report"), group="dynamics"),
)

#: the package's names, each imported on first use (listing the commands imports no torch)
EXPORTS = {"EmVsSgdConfig": "em_vs_sgd_config", "VerifyConfig": "verify_config",
           "run_em_vs_sgd": "em_vs_sgd", "run_verify": "verify"}
__all__, __getattr__ = package_exports(__name__, EXPORTS)
