"""``bayesgeom steer``: causal tests of the entropy axis against control directions."""

from ..kit.experiment import Experiment, package_exports

EXPERIMENTS = (Experiment.in_package(
    __name__, "steer", "cut / keep / shift the entropy axis vs random directions",
    "SteerConfig", "run_steer"),)

#: the package's names, each imported on first use (listing the commands imports no torch)
EXPORTS = {"SteerConfig": "config", "SteerResult": "result", "run_steer": "run"}
__all__, __getattr__ = package_exports(__name__, EXPORTS)
