"""``bayesgeom sweep``: a grid of wind-tunnel runs over seeds, aggregated (exit 1 if a cell
failed; the others still run and are aggregated). ``--config FILE`` (TOML or JSON) gives any
option by its field name; flags given on the command line override it."""

from ..kit.experiment import Experiment, Later, package_exports

EXPERIMENTS = (Experiment.in_package(
    __name__, "sweep",
    "train a grid of wind-tunnel runs (tasks x archs x presets x seeds) and aggregate "
    "them",
    "SweepConfig", "run_sweep",
    arguments=Later(f"{__name__}.config_file", "add_config_file"),
    prepare=Later(f"{__name__}.config_file", "config_file_values"),
    failed=lambda r: bool(r.failed)),)

#: the package's names, each imported on first use (listing the commands imports no torch)
EXPORTS = {"SweepCell": "result", "SweepConfig": "config", "SweepResult": "result",
           "run_sweep": "run"}
__all__, __getattr__ = package_exports(__name__, EXPORTS)
