"""Turn prompts (strings, token lists, a [N, T] id tensor or a wind-tunnel ``TaskBatch``) into
validated token lists: none empty, none longer than the model context."""

from __future__ import annotations

import hashlib
import json
from collections.abc import Sequence
from typing import Any

import torch

from interp.errors import PromptError

Prompts = Sequence[str] | Sequence[Sequence[int]] | torch.Tensor | Any


def encode_prompts(
    prompts: Prompts, tokenizer: Any | None, n_ctx: int | None, vocab_size: int | None = None
) -> tuple[list[list[int]], list[str] | None]:
    """(token lists, texts or None). Raises :class:`PromptError` with the offending prompt."""
    if isinstance(prompts, dict):
        raise PromptError("pass prompt texts or unpadded token lists, not a tokenizer's output "
                          "(interp pads and masks batches itself)")
    if hasattr(prompts, "input_ids"):  # a wind-tunnel TaskBatch
        prompts = prompts.input_ids
    if isinstance(prompts, str):
        prompts = [prompts]
    if isinstance(prompts, torch.Tensor):
        if prompts.ndim == 1:
            prompts = prompts[None]
        if prompts.ndim != 2 or prompts.is_floating_point():
            raise PromptError(f"token tensor must be [N, T] integers, got {tuple(prompts.shape)}")
        prompts = prompts.tolist()
    prompts = list(prompts)
    if not prompts:
        raise PromptError("no prompts given (the prompt list is empty)")
    texts: list[str] | None = None
    if all(isinstance(p, str) for p in prompts):
        texts = list(prompts)
        for i, t in enumerate(texts):
            if not t:
                raise PromptError(f"prompt {i} is an empty string")
        if tokenizer is None:
            raise PromptError("this model has no tokenizer: pass token ids instead of strings")
        tokens = [list(ids) for ids in tokenizer(texts, add_special_tokens=True)["input_ids"]]
    elif any(isinstance(p, str) for p in prompts):
        raise PromptError("prompts mix strings and token lists; pass one kind")
    else:
        tokens = [[int(x) for x in p] for p in prompts]
    for i, t in enumerate(tokens):
        if not t:
            raise PromptError(f"prompt {i} has no tokens")
        if n_ctx is not None and len(t) > n_ctx:
            shown = f" ({texts[i][:60]!r})" if texts else ""
            raise PromptError(
                f"prompt {i}{shown} has {len(t)} tokens, longer than the model context of "
                f"{n_ctx} tokens; shorten or drop it"
            )
        if vocab_size is not None and (min(t) < 0 or max(t) >= vocab_size):
            raise PromptError(
                f"prompt {i} has token ids outside the vocabulary 0..{vocab_size - 1}")
    return tokens, texts


def prompts_sha256(tokens: list[list[int]], texts: list[str] | None) -> str:
    """Hash of the prompts (texts when given, else token ids) for manifests and resume checks."""
    payload = texts if texts is not None else tokens
    return hashlib.sha256(json.dumps(payload).encode()).hexdigest()
