"""``bayesgeom sula``: in-context Bayesian calibration of a text model, with three controls."""

from ..kit.experiment import Experiment, package_exports

EXPERIMENTS = (Experiment.in_package(
    __name__, "sula", "in-context Bayesian calibration (SULA) with its controls",
    "SulaConfig", "run_sula"),)

#: the package's names, each imported on first use (listing the commands imports no torch)
EXPORTS = {"SulaConfig": "config", "SulaResult": "result", "run_sula": "run"}
__all__, __getattr__ = package_exports(__name__, EXPORTS)
