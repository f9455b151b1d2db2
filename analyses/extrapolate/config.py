"""The options of ``bayesgeom extrapolate``: :class:`ExtrapolateConfig`, each declared once, and
its ``check()``, which the command line runs before the run module is imported: this module
imports no torch, transformers, pandas, scipy or plotly, so a bad option or ``--out`` is refused
at once, with nothing loaded (``tests/analyses/cli/test_validate_first.py``)."""

from __future__ import annotations

import difflib
from dataclasses import dataclass

from ...records import option, seed_option
from ...records.budget import SEQUENCES, STEPS, TOKEN_LIST, TOKENS
from ...windtunnel.arch_registry import ARCH_NAMES
from ...windtunnel.names import PRESET_NAMES
from ...windtunnel.train_config import TrainConfig
from ..kit.errors import ExperimentError
from ..kit.run_options import RunOptions, Seeded

SCHEMES = ("llama-bam", "llama-alibi", "llama-nope", "llama-rope", "llama")


@dataclass
class ExtrapolateConfig(Seeded, RunOptions, experiment="extrapolate",
                        formerly=("extrapolation",)):
    """One extrapolation study (module doc)."""

    seed: int = seed_option(0, "seed of training and of the held-out sequences")
    archs: tuple[str, ...] = option(SCHEMES, "architectures, one per positional scheme",
                                    unique=True)
    length: int = option(16, "training length L (tokens)", min=6, cost=TOKENS)
    multiples: tuple[int, ...] = option((1, 2, 5, 10, 50, 100, 500),
                                        "evaluation lengths as multiples of L", unique=True,
                                        cost=TOKEN_LIST)
    key_vocab: int = option(16, "long_recall keys", min=2)
    value_vocab: int = option(16, "long_recall values (the hypotheses)", min=2)
    noise: float = option(0.0, "long_recall observation noise", min=0.0, max=0.5)
    preset: str = option("small", "model size", choices=PRESET_NAMES)
    steps: int = option(2000, "training steps per scheme", min=1, cost=STEPS)
    batch_size: int = option(256, "training sequences per step", min=1)
    lr: float = option(1e-3, "peak learning rate (a pilot: 1e-3 with 256 sequences learns "
                       "L = 16 retrieval by 1,000 steps; 3e-3 stalls near 0.4)", above=0)
    n_eval: int = option(32, "held-out sequences per (scheme, length)", min=1, cost=SEQUENCES)
    eval_batch: int = option(8, "sequences per chunked forward", min=1, identity=False)
    chunk: int = option(512, "queries per chunk of the long evaluation", min=1,
                        identity=False)
    tolerance: float = option(0.05, "accuracy drop (absolute) still counted as extrapolating",
                              min=0.0, max=1.0)
    device: str | None = option(None, "torch device (default: cpu)", identity=False)

    def check(self) -> None:
        super().check()
        if not self.multiples or min(self.multiples) != 1:
            raise ExperimentError("--multiples must include 1 (the training length)")
        unknown = [a for a in self.archs if a not in ARCH_NAMES]
        if unknown:  # a typo is refused here, not when its scheme's turn to train comes
            near = difflib.get_close_matches(unknown[0], SCHEMES, n=1, cutoff=0.6)
            raise ExperimentError(f"unknown archs {', '.join(unknown)}; "
                                  f"{f'did you mean {near[0]!r}? ' if near else ''}available: "
                                  f"{', '.join(ARCH_NAMES)}")
        bad = [a for a in self.archs if not a.startswith(("llama", "transformer"))]
        if bad:
            raise ExperimentError(f"archs {bad} have no attention positional scheme")

    def task_params(self) -> dict:
        return {"length": self.length, "key_vocab": self.key_vocab,
                "value_vocab": self.value_vocab, "noise": self.noise,
                "max_length": self.length * max(self.multiples)}

    def train_config(self, arch: str) -> TrainConfig:
        every = max(1, self.steps // 5)
        return TrainConfig(task="long_recall", task_params=self.task_params(), arch=arch,
                           preset=self.preset, steps=self.steps, seed=self.seed,
                           batch_size=self.batch_size, lr=self.lr, eval_every=every, eval_size=256,
                           final_eval_size=512, ckpt_every=every, device=self.device)
