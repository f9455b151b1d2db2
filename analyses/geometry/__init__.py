"""``bayesgeom geometry``: Paper III value/key/attention geometry of one model."""

from ..kit.experiment import Experiment
from .report import format_summary
from .result import GeometryResult
from .run import GeometryConfig, run_geometry

EXPERIMENTS = (Experiment(
    "geometry", "Paper III value/key/attention geometry on real text", GeometryConfig,
    run_geometry, format_summary),)

__all__ = ["EXPERIMENTS", "GeometryConfig", "GeometryResult", "run_geometry"]
