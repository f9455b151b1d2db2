"""``bayesgeom steer``: causal tests of the entropy axis against control directions."""

from ..kit.experiment import Experiment, Later, lazy_exports

EXPERIMENTS = (Experiment(
    "steer", "cut / keep / shift the entropy axis vs random directions",
    config=Later(f"{__name__}.config", "SteerConfig"),
    run=Later(f"{__name__}.run", "run_steer"),
    summary=Later(f"{__name__}.report", "format_summary")),)

#: the package's names, each imported on first use (listing the commands imports no torch)
EXPORTS = {"SteerConfig": "config", "SteerResult": "result", "run_steer": "run"}
__all__ = ["EXPERIMENTS", *EXPORTS]
__getattr__ = lazy_exports(__name__, EXPORTS)
