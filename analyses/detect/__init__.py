"""``bayesgeom detect``: the key frame of every head (orthogonality 1 − mean |cos|, beside it
isotropy and dimension utilisation) with the random-init twin and random vectors."""

from ..kit.experiment import Experiment, Later, lazy_exports

EXPERIMENTS = (Experiment(
    "detect", "key-frame orthogonality (1 − mean |cos|, Paper I) of every head, beside "
    "isotropy and utilisation, with the random-init twin and random vectors",
    config=Later(f"{__name__}.config", "DetectConfig"),
    run=Later(f"{__name__}.run", "run_detect"),
    summary=Later(f"{__name__}.report", "format_summary")),)

#: the package's names, each imported on first use (listing the commands imports no torch)
EXPORTS = {"DetectConfig": "config", "DetectResult": "result",
           "HeadFrame": "result", "run_detect": "run"}
__all__ = ["EXPERIMENTS", *EXPORTS]
__getattr__ = lazy_exports(__name__, EXPORTS)
