"""Left-padded token batches with ``position_ids`` derived from the attention mask.

Left padding keeps every prompt's last token in the last column. Positions are counted over real
tokens only (``cumsum(mask) - 1``), so a padded prompt sees the same positions as when run alone;
without this, models with learned absolute positions (GPT-2, the wind-tunnel transformer) shift
their activations under padding.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import torch


@dataclass(frozen=True)
class TokenBatch:
    """A batch of ``B`` prompts padded on the left to ``T`` tokens.

    ``input_ids``, ``attention_mask`` (1 = real token), ``position_ids``: [B, T] int64;
    ``lengths``: [B] real tokens per prompt; ``prompt_index``: [B] index of each row's prompt in
    the caller's prompt list.
    """

    input_ids: torch.Tensor
    attention_mask: torch.Tensor
    position_ids: torch.Tensor
    lengths: torch.Tensor
    prompt_index: torch.Tensor

    @property
    def size(self) -> int:
        return int(self.input_ids.shape[0])

    @property
    def width(self) -> int:
        return int(self.input_ids.shape[1])

    @property
    def offsets(self) -> torch.Tensor:
        """[B] number of pad tokens before each prompt (column of its first real token)."""
        return self.width - self.lengths

    def to(self, device: torch.device | str) -> TokenBatch:
        return TokenBatch(self.input_ids.to(device), self.attention_mask.to(device),
                          self.position_ids.to(device), self.lengths, self.prompt_index)


def position_ids_from_mask(attention_mask: torch.Tensor) -> torch.Tensor:
    """[B, T] positions counting real tokens from 0 (pads get 0)."""
    return (attention_mask.long().cumsum(-1) - 1).clamp(min=0)


def left_pad(
    tokens: Sequence[Sequence[int]], pad_id: int, prompt_index: Sequence[int] | None = None
) -> TokenBatch:
    """Stack token lists into a left-padded :class:`TokenBatch`."""
    lengths = torch.tensor([len(t) for t in tokens], dtype=torch.long)
    width = int(lengths.max())
    ids = torch.full((len(tokens), width), pad_id, dtype=torch.long)
    mask = torch.zeros((len(tokens), width), dtype=torch.long)
    for i, t in enumerate(tokens):
        if len(t):
            ids[i, width - len(t):] = torch.as_tensor(list(t), dtype=torch.long)
            mask[i, width - len(t):] = 1
    idx = torch.arange(len(tokens)) if prompt_index is None else torch.as_tensor(list(prompt_index))
    return TokenBatch(ids, mask, position_ids_from_mask(mask), lengths, idx.long())


def batch_bounds(lengths: Sequence[int], lo: int, hi: int, batch_size: int,
                 max_tokens: int | None = None) -> list[tuple[int, int]]:
    """Consecutive ``(start, stop)`` prompt ranges covering ``lo:hi``, each at most
    ``batch_size`` prompts and, when ``max_tokens`` is given, at most that many padded tokens
    (prompts × the longest one; a single prompt is always allowed). Bounds what a forward pass
    allocates per padded token, e.g. logits at every position of a large vocabulary.

    Example:
        >>> batch_bounds([3, 3, 9, 1], 0, 4, batch_size=3, max_tokens=10)
        [(0, 2), (2, 3), (3, 4)]
    """
    out, i = [], lo
    while i < hi:
        j = min(hi, i + batch_size)
        if max_tokens is not None:
            while j - i > 1 and (j - i) * max(lengths[i:j]) > max_tokens:
                j -= 1
        out.append((i, j))
        i = j
    return out
