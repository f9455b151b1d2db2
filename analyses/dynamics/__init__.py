"""``bayesgeom dynamics``: Paper II -- ``verify`` (the gradient identities in every head of a
model against autograd), ``em-vs-sgd`` (the sticky Markov-chain training comparison) and the
training-dynamics monitor of ``windtunnel train --monitor-every``."""

from ..kit.experiment import Experiment
from .em_vs_sgd import EmVsSgdConfig, run_em_vs_sgd
from .em_vs_sgd_report import format_summary as em_vs_sgd_summary
from .verify import VerifyConfig, run_verify
from .verify_report import format_summary as verify_summary

EXPERIMENTS = (
    Experiment("verify", "the routing law, value update and Q/K gradients of every attention "
               "head, predicted and compared with autograd", VerifyConfig, run_verify,
               verify_summary, group="dynamics"),
    Experiment("em-vs-sgd", "the sticky Markov chain: the authors' SGD and learning-rate split, "
               "tuned baselines (SGD, per-matrix lrs, Adam) and an EM-like closed-form M-step "
               "with its ablations, over seeds, with paired tests", EmVsSgdConfig,
               run_em_vs_sgd, em_vs_sgd_summary, group="dynamics"),
)

__all__ = ["EXPERIMENTS", "EmVsSgdConfig", "VerifyConfig", "run_em_vs_sgd", "run_verify"]
