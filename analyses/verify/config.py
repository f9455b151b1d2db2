"""The options of ``bayesgeom verify``: :class:`VerifyConfig`, each declared once, and its
``check()``, which the command line runs before the run module is imported: this module imports
no torch, transformers, pandas, scipy or plotly, so a bad option or ``--out`` is refused at
once, with nothing loaded (``tests/analyses/cli/test_validate_first.py``)."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from ...records import option, seed_option
from ...records.budget import DRAWS, PROMPTS
from ..kit.options import layers_option
from ..kit.run_options import Batched, ModelOptions, RunOptions, Seeded, TwinSeeded, changed_options


@dataclass
class VerifyConfig(ModelOptions, Batched, Seeded, TwinSeeded, RunOptions,
                        experiment="verify", batch_size=32):
    """One verification (``model``: a Hub name, local directory or wind-tunnel run)."""

    task: str | None = option(None, "the task (default: a wind tunnel's own, sula for text)")
    n_prompts: int = option(256, "wind-tunnel prompts (cut at prediction positions)", min=4,
                            cost=PROMPTS)
    n_per_k: int = option(20, "SULA prompts per k", min=2, cost=PROMPTS)
    labels: tuple[str, str] | None = option(None, "SULA label pair, e.g. lug,mip (default: "
                                            "picked)")
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
    sula_seed: int = seed_option(42, "seed of SULA's draws")

    def check(self) -> None:
        """The shared checks, and no SULA option given for a wind tunnel (it reads its own
        task's sequences, so ``labels``, ``n_per_k`` and ``sula_seed`` would be ignored)."""
        super().check()
        sula_only = changed_options(self, SULA_ONLY)
        if sula_only and self.model is not None and _is_windtunnel(Path(self.model)):
            raise self.error(f"{', '.join('--' + o.replace('_', '-') for o in sula_only)} "
                             f"appl{'ies' if len(sula_only) == 1 else 'y'} to text models (SULA "
                             f"prompts); {self.model} is a wind tunnel, read on its own task")


#: the options only SULA prompts (a text model's) read
SULA_ONLY = ("labels", "n_per_k", "sula_seed")


def _is_windtunnel(path: Path) -> bool:
    """:func:`windtunnel.is_windtunnel_dir`, read from the records alone (no torch), imported
    only when a SULA option is given with a model."""
    from ...windtunnel.run_identity import is_windtunnel_dir

    return is_windtunnel_dir(path)
