"""The options of ``bayesgeom ablate``: :class:`AblateConfig`, each declared once, and its
``check()``, which the command line runs before the run module is imported: this module imports
no torch, transformers, pandas, scipy or plotly, so a bad option or ``--out`` is refused at
once, with nothing loaded (``tests/analyses/cli/test_validate_first.py``)."""

from __future__ import annotations

from dataclasses import dataclass

from ...records import option
from ...records.budget import RUN_LIST, RUNS, SEQUENCES, STEPS
from ..kit.errors import ExperimentError
from ..kit.options import comma_ints, comma_words
from ..kit.run_options import RunOptions, Seeded

CONDITIONS = ("heads", "layers", "cumulative")


# ---------------------------------------------------------------- the experiment
@dataclass
class AblateConfig(Seeded, RunOptions, experiment="ablate"):
    """One ``bayesgeom ablate`` run (module doc). Sizes: ``n`` held-out sequences per
    condition; ``ks``: the task's K (observations per HMM sequence) to evaluate at."""

    run_dir: str = option("", "wind-tunnel run directory (or its saved model/)", flag="run_dir")
    n: int = option(2000, "held-out sequences per condition", min=1, cost=SEQUENCES)
    conditions: tuple[str, ...] = option(CONDITIONS, "subset of heads,layers,cumulative "
                                         "(none: only the retrain)", parse=comma_words)
    all_layer_heads: bool = option(False, "ablate the heads of every layer, not only layer 0")
    control: str = option("mean", "the matched control beside each zeroing: mean (mean-"
                          "ablation) or none", choices=("mean", "none"))
    ks: tuple[int, ...] = option((), "evaluate at each K (tasks with a K, such as hmm; "
                                 "default: the K it was trained at)", flag="--K",
                                 parse=comma_ints, min=1, metavar="K[,K...]", cost=RUN_LIST)
    retrain_top_attention: int = option(0, "also retrain the run's config with attention "
                                        "zeroed in its top N layers, beside its control "
                                        "(0: no)", flag="--retrain-without-top-attention", min=0,
                                        metavar="N", cost=RUNS)
    retrain_ks: tuple[int, ...] = option((), "K of the retrain's evaluation (default: --K)",
                                         flag="--retrain-K", parse=comma_ints, min=1,
                                         metavar="K[,K...]", cost=RUN_LIST)
    retrain_steps: int | None = option(None, "optimiser steps of the retrain and its control "
                                       "(default: the run's own; the run is then the control)",
                                       min=1, cost=STEPS)
    retrain_minutes: float | None = option(None, "training wall-time budget of each retrain "
                                           "(minutes)", above=0)

    def check(self) -> None:
        super().check()
        if not self.run_dir:
            raise ExperimentError("give the wind-tunnel run directory to ablate (RUN_DIR)")
        bad = [c for c in self.conditions if c not in (*CONDITIONS, "none")]
        if bad:
            raise ExperimentError(f"unknown condition(s) {', '.join(bad)}; choose from "
                                f"{', '.join(CONDITIONS)} or none")
        if self.retrain_top_attention == 0 and (self.retrain_ks or self.retrain_steps
                                                or self.retrain_minutes):
            raise ExperimentError("--retrain-K, --retrain-steps and --retrain-minutes need "
                                "--retrain-without-top-attention N")
