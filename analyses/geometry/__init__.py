"""``bayesgeom geometry``: Paper III value/key/attention geometry of one model."""

from ..kit.experiment import Experiment, package_exports

EXPERIMENTS = (Experiment.in_package(
    __name__, "geometry", "Paper III value/key/attention geometry on real text",
    "GeometryConfig", "run_geometry"),)

#: the package's names, each imported on first use (listing the commands imports no torch)
EXPORTS = {"GeometryConfig": "config", "GeometryResult": "result", "run_geometry": "run"}
__all__, __getattr__ = package_exports(__name__, EXPORTS)
