"""The options of ``bayesgeom dynamics em-vs-sgd``: :class:`EmVsSgdConfig`, each declared once, and
its ``check()``, which the command line runs before the run module is imported: this module
imports no torch, transformers, pandas, scipy or plotly, so a bad option or ``--out`` is refused
at once, with nothing loaded (``tests/analyses/cli/test_validate_first.py``)."""

from __future__ import annotations

from dataclasses import dataclass

from ....records import option
from ....records.budget import DEEP_STEPS, STEPS
from ....windtunnel.names import STICKY_SEEDS
from ...kit.run_options import RunOptions, changed_options

QUICK_SEEDS, QUICK_STEPS = 2, 150


@dataclass
class EmVsSgdConfig(RunOptions, experiment="em-vs-sgd"):
    """One run (module doc)."""

    seeds: int = option(5, "the first N of the authors' seeds 42,2024,1337,7777,9999", min=1,
                        max=len(STICKY_SEEDS), metavar="N")
    steps: int = option(1000, "full-batch training steps per protocol (tuning trials too)",
                        min=1, metavar="N", cost=STEPS)
    quick: bool = option(False, f"a smoke run: {QUICK_SEEDS} seeds, {QUICK_STEPS} steps, "
                         "3-point grids (quick: not a result)")
    deep: bool = option(False, "also run the deep variant (4 blocks, AdamW, held-out test)")
    deep_steps: int = option(2000, "AdamW steps of the deep variant (cosine over them)", min=1,
                             metavar="N", needs="deep", cost=DEEP_STEPS)
    deep_seeds: int = option(0, "the deep variant on the first N of the seeds (0: all of "
                             "--seeds); it costs about 2.5 s a step on one CPU core", min=0,
                             metavar="N", needs="deep")

    def check(self) -> None:
        super().check()
        if self.quick and (given := changed_options(self, ("seeds", "steps"))):
            raise self.error(f"--quick sets its own sizes; drop --{given[0]}")
        if self.deep_seeds > self.n_seeds:
            raise self.error(f"deep_seeds ({self.deep_seeds}) must not exceed seeds "
                             f"({self.n_seeds})")

    @property
    def n_seeds(self) -> int:
        return QUICK_SEEDS if self.quick else self.seeds

    @property
    def n_steps(self) -> int:
        return QUICK_STEPS if self.quick else self.steps

    def seed_list(self) -> list[int]:
        return list(STICKY_SEEDS[: self.n_seeds])

    def deep_seed_list(self) -> list[int]:
        """The seeds the deep variant runs on (none unless ``deep``)."""
        return list(STICKY_SEEDS[: self.deep_seeds or self.n_seeds]) if self.deep else []
