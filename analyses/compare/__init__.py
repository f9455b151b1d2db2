"""``bayesgeom compare``: the same geometry metrics on several models, side by side."""

from typing import TYPE_CHECKING

from ...records.lazy import lazy_exports
from ..kit.experiment import Experiment, Later

if TYPE_CHECKING:
    from .config import CompareConfig
    from .result import CompareResult
    from .run import run_compare

#: the geometry config that compare nests
GEOMETRY_CONFIG = f"{__name__.rpartition('.')[0]}.geometry.config"

EXPERIMENTS = (Experiment.in_package(
    __name__, "compare", "side-by-side geometry of several models (small vs large)",
    nested={"geometry": (Later(GEOMETRY_CONFIG, "GeometryConfig"), ("model", "out"))}),)

__all__ = ["EXPERIMENTS", "CompareConfig", "CompareResult", "run_compare"]
#: each name is imported on first use (:mod:`records.lazy`): listing the commands imports no torch
__getattr__ = lazy_exports(__name__)
