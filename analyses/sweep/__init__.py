"""``bayesgeom sweep``: a grid of wind-tunnel runs over seeds, aggregated (exit 1 if a cell
failed; the others still run and are aggregated). ``--config FILE`` (TOML or JSON) gives any
option by its field name; flags given on the command line override it."""

from typing import TYPE_CHECKING

from ...records.lazy import lazy_exports
from ..kit.experiment import Experiment, Later

if TYPE_CHECKING:
    from .config import SweepConfig
    from .result import SweepCell, SweepResult
    from .run import run_sweep

EXPERIMENTS = (Experiment.in_package(
    __name__, "sweep",
    "train a grid of wind-tunnel runs (tasks x archs x presets x seeds) and aggregate "
    "them",
    arguments=Later(f"{__name__}.config_file", "add_config_file"),
    prepare=Later(f"{__name__}.config_file", "config_file_values"),
    failed=lambda r: bool(r.failed)),)

__all__ = ["EXPERIMENTS", "SweepCell", "SweepConfig", "SweepResult", "run_sweep"]
#: each name is imported on first use (:mod:`records.lazy`): listing the commands imports no torch
__getattr__ = lazy_exports(__name__)
