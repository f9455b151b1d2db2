"""A pass's per-prompt output assembled on the CPU in prompt order, batch by batch, and the
replicas of a stacked pass (:mod:`interp.stacked_edits`) split back into one pass each.

Example:
    >>> import numpy as np, torch
    >>> out = [PromptRows(3), PromptRows(3)]
    >>> split_replicas(out, np.array([2, 0]), torch.tensor([[1.0], [2.0], [3.0], [4.0]]), 2)
    >>> split_replicas(out, np.array([1]), torch.tensor([[5.0], [6.0]]), 1)
    >>> out[0].tensor().flatten().tolist(), out[1].tensor().flatten().tolist()
    ([2.0, 5.0, 1.0], [4.0, 6.0, 3.0])
"""

from __future__ import annotations

import numpy as np
import torch


class PromptRows:
    """One pass's output [N, ...] on the CPU, in prompt order, written batch by batch at the
    batch's prompt indices into one buffer (allocated at the first batch): no per-batch pieces
    held until a concatenation and a reordered copy of it (three times a 262k-vocabulary
    pass's logits before)."""

    def __init__(self, n: int):
        self.n, self.buf = n, None

    def put(self, rows: np.ndarray, x: torch.Tensor) -> None:
        x = x.detach().cpu()
        if self.buf is None:
            self.buf = torch.empty((self.n, *x.shape[1:]), dtype=x.dtype)
        self.buf[torch.as_tensor(rows)] = x

    def tensor(self) -> torch.Tensor:
        assert self.buf is not None, "no batch was written"
        return self.buf


def in_prompt_order(parts: list[torch.Tensor], rows: list[np.ndarray]) -> torch.Tensor:
    """Small per-batch pieces (site activations; rows ``rows[i]`` each) -> [N, ...] in prompt
    order."""
    out = PromptRows(sum(len(r) for r in rows))
    for r, x in zip(rows, parts, strict=True):
        out.put(r, x)
    return out.tensor()


def split_replicas(dest: list[PromptRows], rows: np.ndarray, x: torch.Tensor, b: int) -> None:
    """Replica j's rows ``x[j·b:(j+1)·b]`` of a stacked pass into ``dest[j]``."""
    for j, d in enumerate(dest):
        d.put(rows, x[j * b:(j + 1) * b])
