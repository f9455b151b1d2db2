"""The options of ``bayesgeom verify``: :class:`VerifyConfig`, each declared once, and its
``check()``, which the command line runs before the run module is imported: this module imports
no torch, transformers, pandas, scipy or plotly, so a bad option or ``--out`` is refused at
once, with nothing loaded (``tests/analyses/cli/test_validate_first.py``)."""

from __future__ import annotations

from dataclasses import dataclass

from ...records import option, seed_option
from ...records.budget import DRAWS, PROMPTS
from ..kit.model_facts import TEXT, check_task
from ..kit.options import layers_option
from ..kit.run_options import Batched, ModelOptions, RunOptions, Seeded, TwinSeeded


@dataclass
class VerifyConfig(ModelOptions, Batched, Seeded, TwinSeeded, RunOptions,
                        experiment="verify", batch_size=32):
    """One verification (``model``: a Hub name, local directory or wind-tunnel run)."""

    task: str | None = option(None, "the task (default: a wind tunnel's own, sula for text)")
    n_prompts: int = option(256, "wind-tunnel prompts (cut at prediction positions)", min=4,
                            cost=PROMPTS)
    n_per_k: int = option(20, "SULA prompts per k", min=2, needs=TEXT, cost=PROMPTS)
    labels: tuple[str, str] | None = option(None, "SULA label pair, e.g. lug,mip (default: "
                                            "picked)", needs=TEXT)
    layers: tuple[int, ...] | None = layers_option("layers whose heads are read")
    n_null: int = option(200, "within-group permutations per head's null", min=10, cost=DRAWS)
    alpha: float = option(0.05, "level of the tests: Holm-adjusted for 'carries the "
                          "posterior', and the best head against the best of as many random "
                          "heads", above=0, max=1)
    n_splits: int = option(20, "seeded two-half splits of the cross-fitted best-head "
                           "selection (chosen on one half, scored on the other)", min=1, cost=DRAWS)
    n_random: int = option(1000, "draws of the best of H random heads, per null (random "
                           "Dirichlet heads; the model's heads re-dealt)", min=10, cost=DRAWS)
    min_r: float = option(0.3, "smallest |r| for 'carries the posterior'", min=0, max=1)
    sula_seed: int = seed_option(42, "seed of SULA's draws", needs=TEXT)

    def check(self) -> None:
        """The shared checks (an option the model's kind would ignore among them) and the
        ``task``'s name (:func:`analyses.kit.model_facts.check_task`)."""
        super().check()
        check_task(self, self.error)


#: the options only SULA prompts (a text model's) read: declared ``needs=TEXT``, so that
#: :meth:`RunOptions.check` refuses them for a wind tunnel (read on its own task)
SULA_ONLY = ("labels", "n_per_k", "sula_seed")
