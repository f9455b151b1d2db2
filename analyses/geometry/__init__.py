"""``bayesgeom geometry``: Paper III value/key/attention geometry of one model."""

from ..kit.experiment import Experiment, Later, lazy_exports

EXPERIMENTS = (Experiment(
    "geometry", "Paper III value/key/attention geometry on real text",
    config=Later(f"{__name__}.config", "GeometryConfig"),
    run=Later(f"{__name__}.run", "run_geometry"),
    summary=Later(f"{__name__}.report", "format_summary")),)

#: the package's names, each imported on first use (listing the commands imports no torch)
EXPORTS = {"GeometryConfig": "config", "GeometryResult": "result", "run_geometry": "run"}
__all__ = ["EXPERIMENTS", *EXPORTS]
__getattr__ = lazy_exports(__name__, EXPORTS)
