"""The SULA task's options, their defaults and its error: what the command line checks before
the task itself (:mod:`windtunnel.sula`, which imports pandas and torch) is needed.

Example:
    >>> SulaTaskConfig().ks, CONDITIONS[0]
    ((0, 1, 2, 4, 8), 'main')
"""

from __future__ import annotations

from dataclasses import dataclass

from ..records import option
from .names import TaskConfigError

KS = (0, 1, 2, 4, 8)
ALPHA = 0.9
CONDITIONS = ("main", "remap", "shuffled", "ablated")
#: label candidates (nonsense words); :func:`cvc_words` extends them when none fits a tokenizer
LABEL_CANDIDATES = ("dax", "lug", "mip", "zorb", "wug", "kep", "tuv", "gax")


class SulaError(TaskConfigError):
    """A SULA configuration that cannot be generated; the message says what to change."""


@dataclass(frozen=True)
class SulaTaskConfig:
    """One SULA condition: examples per prompt ``ks``, label reliability ``alpha``, and the
    label words (each pair must be single tokens for the tokenizer that reads them)."""

    ks: tuple[int, ...] = option(KS, "sula: examples per prompt", min=0)
    alpha: float = option(ALPHA, "sula: chance an example shows the true label (in (0.5, 1))",
                          above=0.5, max=1.0)
    condition: str = option("main", "sula: main, remap, shuffled or ablated",
                            choices=CONDITIONS)
    labels: tuple[str, str] = option(LABEL_CANDIDATES[:2], "sula: the label pair")
    remap_labels: tuple[str, str] = option(LABEL_CANDIDATES[2:4],
                                           "sula: the label pair of the remap control")
