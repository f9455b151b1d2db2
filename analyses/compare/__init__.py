"""``bayesgeom compare``: the same geometry metrics on several models, side by side."""

from ..kit.experiment import Experiment, Later, package_exports

#: the geometry config that compare nests
GEOMETRY_CONFIG = f"{__name__.rpartition('.')[0]}.geometry.config"

EXPERIMENTS = (Experiment.in_package(
    __name__, "compare", "side-by-side geometry of several models (small vs large)",
    "CompareConfig", "run_compare",
    nested={"geometry": (Later(GEOMETRY_CONFIG, "GeometryConfig"), ("model", "out"))}),)

#: the package's names, each imported on first use (listing the commands imports no torch)
EXPORTS = {"CompareConfig": "config", "CompareResult": "result", "run_compare": "run"}
__all__, __getattr__ = package_exports(__name__, EXPORTS)
