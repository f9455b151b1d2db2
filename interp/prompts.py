"""Turn prompts (strings, token lists, a [N, T] id tensor or a wind-tunnel ``TaskBatch``) into
validated token lists: none empty, none longer than the model context, every token an integer
id in the vocabulary.

A leading byte-order mark (``\\ufeff``, what some editors put at the start of a UTF-8 file) is
not part of a prompt's text: it is dropped before tokenising. Anything that is neither a string
nor a list of integer ids (floats, bytes, None, a flat list of ids for several prompts) is a
one-line :class:`PromptError` naming the prompt.

Example:
    >>> encode_prompts([[1, 2], [3]], None, n_ctx=8)
    ([[1, 2], [3]], None)
    >>> encode_prompts([[1.5, 2]], None, n_ctx=8)  # doctest: +IGNORE_EXCEPTION_DETAIL
    Traceback (most recent call last):
    interp.errors.PromptError: prompt 0: token 0 is 1.5 (float); token ids are integers
"""

from __future__ import annotations

import hashlib
import json
import operator
from collections.abc import Sequence
from typing import Any

import torch

from .errors import PromptError

Prompts = Sequence[str] | Sequence[Sequence[int]] | torch.Tensor | Any
BOM = "\ufeff"


def _token_ids(i: int, p: Any) -> list[int]:
    """Prompt ``i`` as a list of ints, or a PromptError saying what it is instead."""
    if isinstance(p, torch.Tensor):
        if p.ndim != 1 or p.is_floating_point() or p.dtype == torch.bool:
            raise PromptError(f"prompt {i} is a {p.dtype} tensor of shape {list(p.shape)}; "
                              "pass 1-D integer token ids")
        return [int(x) for x in p.tolist()]
    if isinstance(p, bytes | bytearray):
        raise PromptError(f"prompt {i} is {type(p).__name__}; decode it to str first")
    if isinstance(p, dict) or not hasattr(p, "__iter__"):
        raise PromptError(f"prompt {i} is {p!r:.40} ({type(p).__name__}); pass strings or lists "
                          "of token ids (one list per prompt, e.g. [[1, 2, 3]])")
    out = []
    for j, x in enumerate(p):
        try:
            if isinstance(x, bool):
                raise TypeError
            out.append(operator.index(x))
        except TypeError:
            raise PromptError(f"prompt {i}: token {j} is {x!r:.40} ({type(x).__name__}); "
                              "token ids are integers") from None
    return out


def encode_prompts(
    prompts: Prompts, tokenizer: Any | None, n_ctx: int | None, vocab_size: int | None = None,
    no_tokenizer: str = "this model has no tokenizer: pass token ids instead of strings",
) -> tuple[list[list[int]], list[str] | None]:
    """(token lists, texts or None). Raises :class:`PromptError` with the offending prompt;
    ``no_tokenizer`` is the message for text prompts when ``tokenizer`` is None."""
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
    if isinstance(prompts, bytes | bytearray) or not hasattr(prompts, "__iter__"):
        raise PromptError(f"prompts must be a list of strings or of token-id lists, got "
                          f"{type(prompts).__name__}")
    prompts = list(prompts)
    if not prompts:
        raise PromptError("no prompts given (the prompt list is empty)")
    texts: list[str] | None = None
    if all(isinstance(p, str) for p in prompts):
        texts = [p.removeprefix(BOM) for p in prompts]
        for i, text in enumerate(texts):
            if not text:
                raise PromptError(f"prompt {i} is an empty string")
            if "\x00" in text:  # tokenizers read it as text: a file read in binary, a C string
                raise PromptError(f"prompt {i} holds a NUL byte (at character "
                                  f"{text.index(chr(0))}); remove it or read the prompts as text")
        if tokenizer is None:
            raise PromptError(no_tokenizer)
        tokens = [list(ids) for ids in tokenizer(texts, add_special_tokens=True)["input_ids"]]
    elif any(isinstance(p, str) for p in prompts):
        raise PromptError("prompts mix strings and token lists; pass one kind")
    else:
        tokens = [_token_ids(i, p) for i, p in enumerate(prompts)]
    for i, t in enumerate(tokens):
        if not t:
            shown = f" ({texts[i][:60]!r})" if texts else ""
            raise PromptError(f"prompt {i}{shown} has no tokens")
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
