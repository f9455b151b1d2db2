"""The options of ``bayesgeom lens``: :class:`LensConfig`, each declared once, and its
``check()``, which the command line runs before the run module is imported: this module imports
no torch, transformers, pandas, scipy or plotly, so a bad option or ``--out`` is refused at
once, with nothing loaded (``tests/analyses/cli/test_validate_first.py``)."""

from __future__ import annotations

from dataclasses import dataclass, replace

from ...records import option, same_option
from ...records.budget import DRAWS, PROMPTS, STEP_FLOOR_S, TOKEN_LIST, Cost
from ...windtunnel.sula_config import SulaTaskConfig
from ..kit.model_facts import TEXT, check_task, kind_of
from ..kit.options import layers_option, model_option
from ..kit.run_options import Batched, LoadOptions, ModelOptions, RunOptions, Seeded, TwinSeeded

#: an L-BFGS iteration of one translator (a forward and backward over the training rows)
ITERATIONS = Cost(STEP_FLOOR_S, "L-BFGS iterations")

#: a ``--quick`` run's sizes (a smoke test: too few prompts and iterations for a result)
QUICK = {"n_train": 40, "n_test": 30, "steps": 15, "n_boot": 200}


@dataclass
class LensConfig(LoadOptions, ModelOptions, Batched, Seeded, TwinSeeded, RunOptions,
                 experiment="lens", batch_size=32):
    """One lens run: ``model`` a wind-tunnel run (read on its own task's exact posteriors) or
    a text model (read on SULA prompts, whose label posterior is exact)."""

    model: str | None = model_option("a wind-tunnel run (its task's exact posteriors) or a "
                                     "text model read on SULA prompts (default: the embedded "
                                     "SmolLM2-135M)")
    task: str | None = option(None, "the task: a wind tunnel's own (default), sula for a text "
                              "model (default)")
    layers: tuple[int, ...] | None = layers_option(
        "layers whose block output resid_post.L is read (the embeddings resid_pre.0 and the "
        "last layer always are)")
    n_train: int = option(300, "prompts the translators are fitted on: a wind tunnel's "
                          "sequences (read at every prediction position) or SULA prompts "
                          "(split evenly over --ks)", min=2, cost=PROMPTS)
    n_test: int = option(200, "held-out prompts every lens is scored on (as --n-train; "
                         "intervals are over these)", min=2, cost=PROMPTS)
    steps: int = option(100, "L-BFGS iterations per translator (full batch)", min=1,
                        cost=ITERATIONS)
    l2: float = option(0.0, "ridge penalty λ‖A‖²_F added to each translator's mean KL (bits)",
                       min=0)
    n_boot: int = option(1000, "bootstrap resamples over held-out prompts (BCa intervals "
                         "at level 0.95)", min=100, cost=DRAWS)
    formed_bits: float = option(0.1, "the model's answer has formed at the first depth from "
                                "which on a lens stays within this KL of the model's final "
                                "output (bits)", above=0)
    ks: tuple[int, ...] = same_option(SulaTaskConfig, "ks", needs=TEXT, cost=TOKEN_LIST)
    alpha: float = same_option(SulaTaskConfig, "alpha", needs=TEXT)
    labels: tuple[str, str] | None = option(None, "SULA label pair, e.g. lug,mip (default: "
                                            "picked)", needs=TEXT)
    quick: bool = option(False, f"a smoke test ({QUICK['n_train']} + {QUICK['n_test']} "
                         f"prompts, {QUICK['steps']} iterations): says it is not a result")

    def __post_init__(self) -> None:
        self.labels = self.labels if self.labels is None else tuple(self.labels)
        self.ks = tuple(self.ks)

    def check(self) -> None:
        """The shared checks, the ``task``'s name, and SULA's prompt counts (a multiple of
        the number of ks, so that every k gets as many)."""
        super().check()
        check_task(self, self.error)
        if kind_of(self) == TEXT and self.task in (None, "sula"):
            n = len(self.ks)
            if not n or min(self.ks) < 0 or len(set(self.ks)) != n:
                raise self.error(f"--ks must be distinct non-negative integers, got "
                                 f"{list(self.ks)}")
            for flag, v in (("--n-train", self.n_train), ("--n-test", self.n_test)):
                if not self.quick and v % n:
                    raise self.error(f"{flag} {v}: SULA draws as many prompts for each of "
                                     f"the {n} values of --ks; give a multiple of {n}")

    def sized(self) -> LensConfig:
        """The configuration that runs: ``quick`` shrinks prompts, iterations and resamples to
        at most :data:`QUICK`'s."""
        if not self.quick:
            return self
        return replace(self, **{k: min(getattr(self, k), v) for k, v in QUICK.items()})
