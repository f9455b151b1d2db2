"""``bayesgeom sula``: in-context Bayesian calibration of a text model, with three controls."""

from ..kit.experiment import Experiment, Later, lazy_exports

EXPERIMENTS = (Experiment(
    "sula", "in-context Bayesian calibration (SULA) with its controls",
    config=Later(f"{__name__}.config", "SulaConfig"),
    run=Later(f"{__name__}.run", "run_sula"),
    summary=Later(f"{__name__}.report", "format_summary")),)

#: the package's names, each imported on first use (listing the commands imports no torch)
EXPORTS = {"SulaConfig": "config", "SulaResult": "result", "run_sula": "run"}
__all__ = ["EXPERIMENTS", *EXPORTS]
__getattr__ = lazy_exports(__name__, EXPORTS)
