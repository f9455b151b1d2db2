"""``bayesgeom sweep``: a grid of wind-tunnel runs over seeds, aggregated (exit 1 if a cell
failed; the others still run and are aggregated). ``--config FILE`` (TOML or JSON) gives any
option by its field name; flags given on the command line override it."""

from ..kit.experiment import Experiment
from .config_file import add_config_file, config_file_values
from .report import format_summary
from .result import SweepCell, SweepResult
from .run import SweepConfig, run_sweep

EXPERIMENTS = (Experiment(
    "sweep", "train a grid of wind-tunnel runs (tasks x archs x presets x seeds) and aggregate "
    "them", SweepConfig, run_sweep, format_summary, arguments=add_config_file,
    prepare=config_file_values, failed=lambda r: bool(r.failed)),)

__all__ = ["EXPERIMENTS", "SweepCell", "SweepConfig", "SweepResult", "run_sweep"]
