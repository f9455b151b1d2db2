"""The options of ``bayesgeom layer-geometry``: :class:`LayerGeometryConfig`, each declared once,
and its ``check()``, which the command line runs before the run module is imported: this module
imports no torch, transformers, pandas, scipy or plotly, so a bad option or ``--out`` is refused
at once, with nothing loaded (``tests/analyses/cli/test_validate_first.py``)."""

from __future__ import annotations

from dataclasses import dataclass

from ...records import option
from ...records.budget import DRAWS, SEQUENCES
from ..kit.errors import ExperimentError
from ..kit.options import model_option
from ..kit.run_options import Batched, RunOptions, Seeded


@dataclass
class LayerGeometryConfig(Batched, Seeded, RunOptions, experiment="layer-geometry", batch_size=64):
    """One run: ``model`` a wind-tunnel run directory (or its model / a checkpoint)."""

    model: str | None = model_option("wind-tunnel run directory (its task is read from it)")
    n_sequences: int = option(250, "held-out sequences (rows: sequences x prediction "
                              "positions)", min=2, cost=SEQUENCES)
    silhouette_pcs: int = option(10, "principal components the silhouette is computed on",
                                 min=1)
    silhouette_samples: int = option(4000, "rows the silhouette uses at most (a seeded "
                                     "subset; it costs O(n^2))", min=10, cost=DRAWS)

    def check(self) -> None:
        super().check()
        if not self.model:
            raise ExperimentError("give the wind-tunnel run to analyse with --model RUN")
