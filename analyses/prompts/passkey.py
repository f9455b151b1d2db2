"""Passkey retrieval prompts for a text model, at an exact length in tokens: the long-context
task with an exact posterior that :mod:`analyses.stability.run` reads on a pretrained LLM.

A prompt is ``HEAD``, then filler sentences with the needle ``" The pass key is 73512.
Remember it. 73512 is the pass key."`` inserted at a uniformly random depth (at a token
boundary of the filler), then ``" What is the pass key? The pass key is "``; the key is five
random digits. The next token is the key's first digit, so the hypotheses are the ten digit
tokens and the exact posterior is a point mass on that digit (the context determines it):
accuracy is the measure, KL(p_Bayes ‖ p_model) = −log2 p_model(digit) over the ten digits, and
chance is 1/10. Lengths are exact: the filler is cut to fill ``length`` tokens.

Example:
    >>> import numpy as np
    >>> from bayesgeom import interp
    >>> tok = interp.load().tokenizer
    >>> b = passkey_batch(tok, 64, 2, np.random.default_rng(0))
    >>> b.tokens.shape, len(b.hyp_ids), b.targets.tolist()
    (torch.Size([2, 64]), 10, [8, 0])
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np
import torch

from ...records import UsageError

HEAD = "There is a pass key hidden in this text. Find it and remember it."
FILLER = (" The grass is green. The sky is blue. The sun is yellow. Here we go. There and "
          "back again.")
NEEDLE = " The pass key is {key}. Remember it. {key} is the pass key."
QUESTION = " What is the pass key? The pass key is "


class PasskeyError(UsageError):
    """Passkey prompts cannot be built for this tokenizer or length (exit status 2)."""


@dataclass(frozen=True, eq=False)
class PasskeyBatch:
    """``tokens`` [n, length] int64; ``targets`` [n] the key's first digit (0–9, an index into
    ``hyp_ids``); ``hyp_ids`` the ten digit token ids."""

    tokens: torch.Tensor
    targets: torch.Tensor
    hyp_ids: list[int]


def _ids(tokenizer: Any, text: str) -> list[int]:
    return list(tokenizer.encode(text, add_special_tokens=False))


def digit_ids(tokenizer: Any) -> list[int]:
    """The token id of each digit as it follows the question's final space."""
    base = _ids(tokenizer, QUESTION)
    out = []
    for d in "0123456789":
        full = _ids(tokenizer, QUESTION + d)
        if len(full) != len(base) + 1 or full[:len(base)] != base:
            raise PasskeyError("this tokenizer does not write each digit after the question as "
                               "one token of its own; passkey prompts need that")
        out.append(full[-1])
    return out


def min_length(tokenizer: Any) -> int:
    """The shortest prompt (no filler), in tokens."""
    return len(_ids(tokenizer, HEAD)) + len(_ids(tokenizer, NEEDLE.format(key="00000"))) + \
        len(_ids(tokenizer, QUESTION))


def passkey_batch(tokenizer: Any, length: int, n: int, rng: np.random.Generator,
                  ) -> PasskeyBatch:
    """``n`` prompts of exactly ``length`` tokens (module doc), drawn with ``rng``."""
    if tokenizer is None:
        raise PasskeyError("passkey prompts need a text model with a tokenizer")
    hyp = digit_ids(tokenizer)
    head, question = _ids(tokenizer, HEAD), _ids(tokenizer, QUESTION)
    filler_unit = _ids(tokenizer, FILLER)
    rows, targets = [], []
    for _ in range(n):
        key = "".join(str(d) for d in rng.integers(0, 10, size=5))
        needle = _ids(tokenizer, NEEDLE.format(key=key))
        budget = length - len(head) - len(needle) - len(question)
        if budget < 0:
            raise PasskeyError(f"a passkey prompt needs at least {length - budget} tokens, "
                               f"got length {length}")
        filler = (filler_unit * (budget // len(filler_unit) + 1))[:budget]
        depth = int(rng.integers(0, budget + 1))
        rows.append(head + filler[:depth] + needle + filler[depth:] + question)
        targets.append(int(key[0]))
    return PasskeyBatch(torch.tensor(rows, dtype=torch.long),
                        torch.tensor(targets, dtype=torch.long), hyp)
