"""``bayesgeom ablate RUN_DIR``: Paper I's head and layer ablations of a wind-tunnel model
(spec §1.9), each beside the clean model and a mean-ablation control; optionally the model
retrained with attention removed from its top layers, beside its control."""

from ..kit.experiment import Experiment, Later, lazy_exports

EXPERIMENTS = (Experiment(
    "ablate", "head and layer ablations of a wind-tunnel model (and the top-attention retrain)",
    config=Later(f"{__name__}.config", "AblationsConfig"),
    run=Later(f"{__name__}.run", "run_experiment"),
    summary=Later(f"{__name__}.report", "format_summary")),)

#: the package's names, each imported on first use (listing the commands imports no torch)
EXPORTS = {"AblationsConfig": "config", "run_experiment": "run"}
__all__ = ["EXPERIMENTS", *EXPORTS]
__getattr__ = lazy_exports(__name__, EXPORTS)
