"""``bayesgeom geometry``: Paper III value/key/attention geometry of one model."""

from typing import TYPE_CHECKING

from ...records.lazy import lazy_exports
from ..kit.experiment import Experiment

if TYPE_CHECKING:
    from .config import GeometryConfig
    from .result import GeometryResult
    from .run import run_geometry

EXPERIMENTS = (Experiment.in_package(
    __name__, "geometry", "Paper III value/key/attention geometry on real text"),)

__all__ = ["EXPERIMENTS", "GeometryConfig", "GeometryResult", "run_geometry"]
#: each name is imported on first use (:mod:`records.lazy`): listing the commands imports no torch
__getattr__ = lazy_exports(__name__)
