"""The options of ``bayesgeom frame-precision``: :class:`FramePrecisionConfig`, each declared once,
and its ``check()``, which the command line runs before the run module is imported: this module
imports no torch, transformers, pandas, scipy or plotly, so a bad option or ``--out`` is refused
at once, with nothing loaded (``tests/analyses/cli/test_validate_first.py``)."""

from __future__ import annotations

from dataclasses import dataclass

from ...records import option
from ...records.budget import SEQUENCES
from ..kit.errors import ExperimentError
from ..kit.run_options import Batched, RunOptions, Seeded


@dataclass
class FramePrecisionConfig(Batched, Seeded, RunOptions,
                           experiment="frame-precision", batch_size=100):
    """One ``bayesgeom frame-precision`` run (module doc). Sizes: ``n`` sequences of the fixed
    batch (attention and value manifold), ``n_mae`` sequences of the MAE evaluation."""

    run_dir: str = option("", "finished wind-tunnel run trained with --dense-ckpt-until",
                          flag="run_dir")
    n: int = option(500, "held-out sequences of the fixed batch (attention rows, value "
                    "manifold)", min=5, cost=SEQUENCES)
    n_mae: int = option(2000, "held-out sequences of the entropy-MAE evaluation", min=1,
                        cost=SEQUENCES)
    tolerance: float = option(0.1, "plateau tolerance: fraction of the metric's range", above=0,
                              max=1)

    def check(self) -> None:
        super().check()
        if not self.run_dir:
            raise ExperimentError("give the wind-tunnel run directory (RUN_DIR)")
