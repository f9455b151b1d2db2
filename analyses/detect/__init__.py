"""``bayesgeom detect``: the key frame of every head (orthogonality 1 − mean |cos|, beside it
isotropy and dimension utilisation) with the random-init twin and random vectors."""

from ..kit.experiment import Experiment, package_exports

EXPERIMENTS = (Experiment.in_package(
    __name__, "detect", "key-frame orthogonality (1 − mean |cos|, Paper I) of every head, beside "
    "isotropy and utilisation, with the random-init twin and random vectors",
    "DetectConfig", "run_detect"),)

#: the package's names, each imported on first use (listing the commands imports no torch)
EXPORTS = {"DetectConfig": "config", "DetectResult": "result",
           "HeadFrame": "result", "run_detect": "run"}
__all__, __getattr__ = package_exports(__name__, EXPORTS)
