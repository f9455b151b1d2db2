"""``bayesgeom dynamics em-vs-sgd``: the sticky Markov chain trained by the authors' SGD and
learning-rate split, tuned baselines and an EM-like closed-form M-step with its ablations,
over seeds, with paired tests against tuned SGD (:mod:`.run`)."""

from ...kit.experiment import Experiment, package_exports

EXPERIMENTS = (Experiment.in_package(
    __name__, "em-vs-sgd", "the sticky Markov chain: the authors' SGD and learning-rate "
    "split, tuned baselines (SGD, per-matrix lrs, Adam) and an EM-like closed-form M-step "
    "with its ablations, over seeds, with paired tests", "EmVsSgdConfig", "run_em_vs_sgd",
    group="dynamics"),)

#: the package's names, each imported on first use (listing the commands imports no torch)
EXPORTS = {"EmVsSgdConfig": "config", "EmVsSgdResult": "result", "run_em_vs_sgd": "run"}
__all__, __getattr__ = package_exports(__name__, EXPORTS)
