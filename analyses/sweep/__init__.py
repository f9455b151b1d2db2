"""``bayesgeom sweep``: a grid of wind-tunnel runs over seeds, aggregated (exit 1 if a cell
failed; the others still run and are aggregated). ``--config FILE`` (TOML or JSON) gives any
option by its field name; flags given on the command line override it."""

from ..kit.experiment import Experiment, Later, lazy_exports

EXPERIMENTS = (Experiment(
    "sweep", "train a grid of wind-tunnel runs (tasks x archs x presets x seeds) and aggregate "
    "them",
    config=Later(f"{__name__}.config", "SweepConfig"),
    run=Later(f"{__name__}.run", "run_sweep"),
    summary=Later(f"{__name__}.report", "format_summary"),
    arguments=Later(f"{__name__}.config_file", "add_config_file"),
    prepare=Later(f"{__name__}.config_file", "config_file_values"),
    failed=lambda r: bool(r.failed)),)

#: the package's names, each imported on first use (listing the commands imports no torch)
EXPORTS = {"SweepCell": "result", "SweepConfig": "config", "SweepResult": "result",
           "run_sweep": "run"}
__all__ = ["EXPERIMENTS", *EXPORTS]
__getattr__ = lazy_exports(__name__, EXPORTS)
