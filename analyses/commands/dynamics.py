"""``bayesgeom dynamics``: Paper II -- ``verify`` (the gradient identities in every head of a
model against autograd) and ``em-vs-sgd`` (the sticky Markov-chain training comparison)."""

from __future__ import annotations

import argparse

from analyses.dynamics_verify import VerifyConfig, run_verify
from analyses.dynamics_verify_report import format_summary
from analyses.em_vs_sgd import EmVsSgdConfig, run_em_vs_sgd
from analyses.em_vs_sgd_report import format_summary as em_summary
from analyses.options import Parser

from .output import register_experiment


def register(sub: argparse._SubParsersAction, parent: argparse.ArgumentParser) -> None:
    p = sub.add_parser("dynamics", help="Paper II: gradient identities and EM-like training")
    dsub = p.add_subparsers(dest="dcmd", required=True, parser_class=Parser)
    register_experiment(dsub, parent, "verify",
                        "the routing law, value update and Q/K gradients of every attention "
                        "head, predicted and compared with autograd", VerifyConfig, run_verify,
                        format_summary)
    register_experiment(dsub, parent, "em-vs-sgd",
                        "the sticky Markov chain: SGD, the authors' learning-rate split and an "
                        "EM-like closed-form M-step, over seeds, with paired tests",
                        EmVsSgdConfig, run_em_vs_sgd, em_summary)
