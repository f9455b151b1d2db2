"""``bayesgeom stability``: calibration, accuracy, attention entropy and key orthogonality of a
long_recall model (or passkey retrieval in a text model) against sequence length, a fitted
accuracy decay curve and the critical length."""

from ..kit.experiment import Experiment, Later, lazy_exports

EXPERIMENTS = (Experiment(
    "stability", "metrics of a long_recall model against sequence length, the accuracy decay "
    "curve and the critical length with its interval",
    config=Later(f"{__name__}.config", "StabilityConfig"),
    run=Later(f"{__name__}.run", "run_stability"),
    summary=Later(f"{__name__}.report", "format_summary")),)

#: the package's names, each imported on first use (listing the commands imports no torch)
EXPORTS = {"StabilityConfig": "config", "StabilityResult": "result", "run_stability": "run"}
__all__ = ["EXPERIMENTS", *EXPORTS]
__getattr__ = lazy_exports(__name__, EXPORTS)
