"""``bayesgeom verify``: a model's attention (the headline) and output calibration against a
task's exact posterior."""

from ..kit.experiment import Experiment, package_exports

EXPERIMENTS = (Experiment.in_package(
    __name__, "verify",
    "Bayesian consistency: attention vs the exact posterior per head (headline, judged "
    "against selection-aware controls), "
    "output calibration beside it, with controls",
    "VerifyConfig", "run_verify"),)

#: the package's names, each imported on first use (listing the commands imports no torch)
EXPORTS = {"VerifyConfig": "config", "VerifyResult": "result", "run_verify": "run"}
__all__, __getattr__ = package_exports(__name__, EXPORTS)
