"""The options of ``bayesgeom detect``: :class:`DetectConfig`, each declared once, and its
``check()``, which the command line runs before the run module is imported: this module imports
no torch, transformers, pandas, scipy or plotly, so a bad option or ``--out`` is refused at
once, with nothing loaded (``tests/analyses/cli/test_validate_first.py``)."""

from __future__ import annotations

from dataclasses import dataclass

from ...records import option
from ...records.budget import PROMPTS, SEQUENCES, TOKENS
from ..kit.model_facts import TEXT, WIND_TUNNEL
from ..kit.options import layers_option
from ..kit.run_options import Batched, ModelOptions, RunOptions, Seeded, TwinSeeded


@dataclass
class DetectConfig(ModelOptions, Batched, Seeded, TwinSeeded, RunOptions, experiment="detect"):
    """One detector run (``model``: a Hub name, local directory or wind-tunnel run)."""

    layers: tuple[int, ...] | None = layers_option("layers whose key frames are scored")
    n_prompts: int = option(64, "prompts of an LLM (paragraphs of built-in text)", min=1,
                            needs=TEXT, cost=PROMPTS)
    max_tokens: int = option(64, "tokens per LLM prompt at most", min=2, needs=TEXT, cost=TOKENS)
    n_tokens: int = option(64, "frame size of an LLM: its most frequent token ids", min=2,
                           needs=TEXT, cost=TOKENS)
    n_sequences: int = option(64, "held-out sequences of a wind tunnel", min=1,
                              needs=WIND_TUNNEL, cost=SEQUENCES)
