"""The options of ``bayesgeom stability``: :class:`StabilityConfig`, each declared once, and its
``check()``, which the command line runs before the run module is imported: this module imports
no torch, transformers, pandas, scipy or plotly, so a bad option or ``--out`` is refused at
once, with nothing loaded (``tests/analyses/cli/test_validate_first.py``)."""

from __future__ import annotations

from dataclasses import dataclass

from ...records import option
from ...records.budget import DRAWS, RUNS, SEQUENCES, TOKEN_LIST, TOKENS
from ..kit.errors import ExperimentError
from ..kit.model_facts import TEXT
from ..kit.options import model_option
from ..kit.run_options import ModelOptions, RunOptions, Seeded, TwinSeeded
from .result import METRICS


@dataclass
class StabilityConfig(ModelOptions, Seeded, TwinSeeded, RunOptions, experiment="stability"):
    """One stability analysis (module doc)."""

    model: str | None = model_option("a wind-tunnel run trained on long_recall, or a text model "
                                     "read on passkey prompts (default: the embedded SmolLM2)")
    lengths: tuple[int, ...] = option((1, 2, 5, 10, 20, 50), "evaluation lengths as multiples "
                                      "of the training length", min=1, cost=TOKEN_LIST)
    max_length: int | None = option(None, "longest length in tokens: --n-lengths lengths "
                                    "spaced geometrically from the training length to it, "
                                    "instead of --lengths", min=4, cost=TOKENS)
    n_lengths: int = option(6, "lengths with --max-length", min=2, needs="max_length",
                            cost=RUNS)
    base_length: int = option(64, "a text model's length unit for --lengths (tokens)", min=8,
                              needs=TEXT, cost=TOKENS)
    metrics: tuple[str, ...] = option(METRICS, f"metrics among {', '.join(METRICS)}")
    n_eval: int = option(64, "held-out sequences per length", min=2, cost=SEQUENCES)
    eval_batch: int = option(8, "sequences per chunked forward", min=1, identity=False)
    chunk: int = option(512, "queries per chunk of the long evaluation", min=1,
                        identity=False)
    max_attention_length: int = option(2048, "longest length at which attention entropy and "
                                       "key orthogonality are measured (full eager forward, "
                                       "O(length^2) memory); NaN beyond", min=4, cost=TOKENS)
    attention_batch: int = option(2, "sequences per full forward of the attention and key "
                                  "reads", min=1, identity=False)
    n_boot: int = option(200, "bootstrap replicates of the critical length", min=1, cost=DRAWS)
    level: float = option(0.95, "level of the critical length's interval", above=0, max=0.999)

    def check(self) -> None:
        super().check()
        bad = [m for m in self.metrics if m not in METRICS]
        if bad or not self.metrics:
            raise ExperimentError(f"--metrics must be among {', '.join(METRICS)}, got "
                                 f"{', '.join(bad) or 'none'}")
