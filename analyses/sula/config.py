"""The options of ``bayesgeom sula``: :class:`SulaConfig`, each declared once, and its ``check()``,
which the command line runs before the run module is imported: this module imports no torch,
transformers, pandas, scipy or plotly, so a bad option or ``--out`` is refused at once, with
nothing loaded (``tests/analyses/cli/test_validate_first.py``)."""

from __future__ import annotations

from dataclasses import dataclass

from ...interp.sites import VECTOR_KINDS
from ...records import option, same_option, seed_option
from ...records.budget import PROMPTS, TOKEN_LIST
from ...windtunnel.sula_config import CONDITIONS, SulaError, SulaTaskConfig
from ..kit.options import comma_words, model_option
from ..kit.run_options import Batched, LoadOptions, ModelOptions, RunOptions, Seeded


@dataclass
class SulaConfig(LoadOptions, ModelOptions, Batched, Seeded, RunOptions,
                 experiment="sula"):
    """One SULA run. ``labels`` / ``remap_labels``: label pairs (None: the first single-token
    candidates). ``site``: the site kind whose last-layer final-token activations give the
    geometry."""

    model: str | None = model_option("Hub name or local directory (default: the embedded "
                                     "SmolLM2-135M)")
    seed: int = seed_option(42, "seed of the SULA draws")
    ks: tuple[int, ...] = same_option(SulaTaskConfig, "ks", cost=TOKEN_LIST)
    n_per_k: int = option(50, "prompts per k", min=1, cost=PROMPTS)
    alpha: float = same_option(SulaTaskConfig, "alpha")
    labels: tuple[str, str] | None = same_option(
        SulaTaskConfig, "labels", None,
        help="label pair, e.g. fed,pol (default: the first single-token candidates)")
    remap_labels: tuple[str, str] | None = same_option(SulaTaskConfig, "remap_labels", None)
    conditions: tuple[str, ...] = option(CONDITIONS, "subset of main,remap,shuffled,ablated",
                                         parse=comma_words)
    site: str = option("attn.v", "last-layer site kind of the geometry", choices=VECTOR_KINDS)

    def __post_init__(self) -> None:
        self.labels = self.labels if self.labels is None else tuple(self.labels)
        self.remap_labels = self.remap_labels if self.remap_labels is None \
            else tuple(self.remap_labels)

    def check(self) -> None:
        super().check()
        bad = [c for c in self.conditions if c not in CONDITIONS]
        if bad or not self.conditions:
            raise SulaError(f"unknown SULA condition(s) {bad or '(none given)'}; choose from "
                            f"{', '.join(CONDITIONS)}")
