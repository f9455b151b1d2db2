"""``bayesgeom stability``: calibration, accuracy, attention entropy and key orthogonality of a
long_recall model (or passkey retrieval in a text model) against sequence length, a fitted
accuracy decay curve and the critical length."""

from ..kit.experiment import Experiment, package_exports

EXPERIMENTS = (Experiment.in_package(
    __name__, "stability",
    "metrics of a long_recall model against sequence length, the accuracy decay "
    "curve and the critical length with its interval",
    "StabilityConfig", "run_stability"),)

#: the package's names, each imported on first use (listing the commands imports no torch)
EXPORTS = {"StabilityConfig": "config", "StabilityResult": "result", "run_stability": "run"}
__all__, __getattr__ = package_exports(__name__, EXPORTS)
