"""Prompts whose next token has an exact Bayes posterior over a few hypotheses.

The one currency every task hands to calibration, geometry and steering: each prompt (a text,
or a token-id list for a wind tunnel) comes with its hypotheses -- token ids, or words for a text
task until a tokenizer turns them into ids (:meth:`PosteriorPrompts.with_token_ids`) -- and the
exact posterior over them at the prompt's final position.

Example:
    >>> import numpy as np
    >>> pp = PosteriorPrompts(name="toy", prompts=["a:", "b:"], hyp_words=("yes", "no"),
    ...                       bayes=np.array([[0.5, 0.5], [0.9, 0.1]]), group=np.array([0, 1]))
    >>> pp.h_bayes_bits.round(3).tolist()
    [1.0, 0.469]
    >>> pp.with_token_ids([17, 4]).hyp_ids.tolist()
    [[17, 4], [17, 4]]
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field, replace

import numpy as np
import pandas as pd

from ..infotheory import entropy_bits_from_probs


class PromptSetError(ValueError):
    """Posterior prompts whose parts do not fit together (shapes, probabilities)."""


@dataclass(frozen=True, eq=False)
class PosteriorPrompts:
    """``prompts`` [N] (texts or token-id lists); ``bayes`` [N, K] float64 exact posterior
    (rows sum to 1); ``hyp_ids`` [N, K] token ids of the hypotheses and/or ``hyp_words`` [K]
    (the same words for every prompt); ``group`` [N] int (SULA: k; wind tunnel: prediction
    index q), named ``group_name``; ``meta``: per-prompt extra columns (N rows)."""

    name: str
    prompts: Sequence[str] | Sequence[Sequence[int]]
    bayes: np.ndarray
    group: np.ndarray
    group_name: str = "q"
    hyp_ids: np.ndarray | None = None
    hyp_words: tuple[str, ...] | None = None
    meta: pd.DataFrame = field(default_factory=pd.DataFrame)

    def __post_init__(self) -> None:
        n = len(self.prompts)
        bayes = np.asarray(self.bayes, dtype=np.float64)
        if bayes.ndim != 2 or bayes.shape[0] != n or bayes.shape[1] < 2:
            raise PromptSetError(f"bayes must be [N={n}, K>=2], got {list(bayes.shape)}")
        if not np.isfinite(bayes).all() or (bayes < 0).any():
            raise PromptSetError("bayes must hold finite non-negative probabilities")
        if not np.allclose(bayes.sum(1), 1.0, atol=1e-9):
            raise PromptSetError("each row of bayes must sum to 1")
        if self.hyp_ids is None and self.hyp_words is None:
            raise PromptSetError("give the hypotheses as hyp_ids or hyp_words")
        if self.hyp_ids is not None:
            hyp = np.asarray(self.hyp_ids)
            if hyp.shape != bayes.shape:
                raise PromptSetError(f"hyp_ids must match bayes {list(bayes.shape)}, got "
                                     f"{list(hyp.shape)}")
            object.__setattr__(self, "hyp_ids", hyp.astype(np.int64))
        if self.hyp_words is not None and len(self.hyp_words) != bayes.shape[1]:
            raise PromptSetError(f"{len(self.hyp_words)} hypothesis words for "
                                 f"{bayes.shape[1]} hypotheses")
        if np.asarray(self.group).shape != (n,):
            raise PromptSetError(f"group must have shape [{n}]")
        if len(self.meta) not in (0, n):
            raise PromptSetError(f"meta must have {n} rows, got {len(self.meta)}")
        object.__setattr__(self, "bayes", bayes)
        object.__setattr__(self, "group", np.asarray(self.group).astype(np.int64))

    def __len__(self) -> int:
        return len(self.prompts)

    @property
    def h_bayes_bits(self) -> np.ndarray:
        """Exact posterior entropy [N] (bits, float64)."""
        return entropy_bits_from_probs(self.bayes)

    def with_token_ids(self, ids: Sequence[int]) -> PosteriorPrompts:
        """A copy whose hypotheses are the token ids ``ids`` [K] (one per hypothesis word)."""
        hyp = np.broadcast_to(np.asarray(ids, dtype=np.int64), self.bayes.shape).copy()
        return replace(self, hyp_ids=hyp)

    def subset(self, idx: Sequence[int] | np.ndarray) -> PosteriorPrompts:
        i = np.asarray(idx, dtype=np.int64)
        return replace(
            self, prompts=[self.prompts[j] for j in i], bayes=self.bayes[i], group=self.group[i],
            hyp_ids=None if self.hyp_ids is None else self.hyp_ids[i],
            meta=self.meta.iloc[i].reset_index(drop=True) if len(self.meta) else self.meta)

    def table(self) -> pd.DataFrame:
        """One row per prompt: prompt index, group, H_Bayes (bits), and the meta columns."""
        df = pd.DataFrame({"prompt": np.arange(len(self)), self.group_name: self.group,
                           "h_bayes_bits": self.h_bayes_bits})
        return pd.concat([df, self.meta.reset_index(drop=True)], axis=1) if len(self.meta) \
            else df
