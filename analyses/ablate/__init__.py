"""``bayesgeom ablate RUN_DIR``: Paper I's head and layer ablations of a wind-tunnel model
(spec §1.9), each beside the clean model and a mean-ablation control; optionally the model
retrained with attention removed from its top layers, beside its control."""

from ..kit.experiment import Experiment, package_exports

EXPERIMENTS = (Experiment.in_package(
    __name__, "ablate",
    "head and layer ablations of a wind-tunnel model (and the top-attention retrain)",
    "AblateConfig", "run_ablate"),)

#: the package's names, each imported on first use (listing the commands imports no torch)
EXPORTS = {"AblateConfig": "config", "AblateResult": "result", "run_ablate": "run"}
__all__, __getattr__ = package_exports(__name__, EXPORTS)
