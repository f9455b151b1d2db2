"""``bayesgeom compare``: the same geometry metrics on several models, side by side."""

from ..kit.experiment import Experiment, Later, lazy_exports

#: the geometry config that compare nests
GEOMETRY_CONFIG = f"{__name__.rpartition('.')[0]}.geometry.config"

EXPERIMENTS = (Experiment(
    "compare", "side-by-side geometry of several models (small vs large)",
    config=Later(f"{__name__}.config", "CompareConfig"),
    run=Later(f"{__name__}.run", "run_compare"),
    summary=Later(f"{__name__}.report", "format_summary"),
    nested={"geometry": (Later(GEOMETRY_CONFIG, "GeometryConfig"), ("model", "out"))}),)

#: the package's names, each imported on first use (listing the commands imports no torch)
EXPORTS = {"CompareConfig": "config", "CompareResult": "result", "run_compare": "run"}
__all__ = ["EXPERIMENTS", *EXPORTS]
__getattr__ = lazy_exports(__name__, EXPORTS)
