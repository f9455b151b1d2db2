"""Causal forward passes over long sequences in query chunks, with Hugging Face's KV cache.

:func:`chunked_logits` feeds the sequence ``chunk`` tokens at a time, each chunk attending to
the cached keys and values of everything before it (``DynamicCache``, absolute
``position_ids``), so a layer's attention holds [B, H, chunk, T] scores instead of
[B, H, T, T]: memory O(chunk × T) for the attention, O(T) for the cache. The logits equal the
unchunked forward's (to float rounding) for every position scheme of the Llama-style wind
tunnel (learned, RoPE, NoPE, ALiBi, BAM: its priors take distances from the cache's slots)
and for the GPT-2 wind tunnel. A model with a learned position table cannot go past it:
:func:`position_limit` says how far it goes, and :func:`chunked_logits` refuses longer inputs.
:func:`score_sequences` scores held-out ``long_recall`` sequences of any length through it
against the exact posterior (what ``bayesgeom extrapolate`` and ``stability`` measure).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING

import numpy as np
import torch
from transformers import DynamicCache

from .arch_registry import saved_model_spec
from .metrics import calibration_stats, slice_log_probs
from .seeds import Purpose, stream
from .task import TaskConfigError

if TYPE_CHECKING:
    from .long_recall import LongRecallTask


def position_limit(model: torch.nn.Module) -> int | None:
    """How many positions ``model`` can embed (its learned table's rows); None without one
    (RoPE, NoPE, ALiBi, BAM) or for a model no wind-tunnel arch saves as.

    Example:
        >>> from bayesgeom.windtunnel import make_task
        >>> from bayesgeom.windtunnel.architectures import build_model
        >>> t = make_task("bijection", V=6)
        >>> position_limit(build_model(t, "llama", "tiny")), position_limit(
        ...     build_model(t, "llama-bam", "tiny"))
        (10, None)
    """
    cfg = getattr(model, "config", None)
    saved = saved_model_spec(getattr(cfg, "model_type", None))
    return None if saved is None else saved.position_limit(cfg)


@torch.no_grad()
def chunked_logits(model: torch.nn.Module, input_ids: torch.Tensor, chunk: int = 512,
                   positions: Sequence[int] | torch.Tensor | None = None) -> torch.Tensor:
    """Next-token logits [B, P, V] (float, on the model's device) of ``input_ids`` [B, T] at
    ``positions`` (P of them, 0-based, any order; default all T), computed causally in chunks
    of ``chunk`` queries with a KV cache. The model runs in eval mode, restored afterwards.

    Example:
        >>> from bayesgeom.windtunnel import make_task
        >>> from bayesgeom.windtunnel.architectures import build_model
        >>> t = make_task("bijection", V=6)
        >>> m = build_model(t, "llama-alibi", "tiny").eval()
        >>> ids = torch.randint(0, t.vocab_size, (2, 40))  # over 4x the task's 9 tokens
        >>> out = chunked_logits(m, ids, chunk=16, positions=[0, 39])
        >>> out.shape
        torch.Size([2, 2, 12])
        >>> bool(torch.allclose(out, m(ids).logits[:, [0, 39]], atol=1e-5))
        True
    """
    if input_ids.ndim != 2:
        raise TaskConfigError(f"chunked_logits needs input_ids [B, T], got shape "
                              f"{tuple(input_ids.shape)}")
    B, T = input_ids.shape
    if chunk < 1 or T < 1:
        raise TaskConfigError(f"chunked_logits needs chunk >= 1 and T >= 1, got chunk={chunk}, "
                              f"T={T}")
    limit = position_limit(model)
    if limit is not None and limit < T:
        raise TaskConfigError(f"this model's learned position table covers {limit} positions, "
                              f"not {T}: use a scheme without a table (rope, nope, alibi, bam) "
                              "or sequences of at most that length")
    device = next(model.parameters()).device
    pos = torch.arange(T) if positions is None else torch.as_tensor(positions, dtype=torch.long)
    if pos.ndim != 1 or (pos.numel() and (int(pos.min()) < 0 or int(pos.max()) >= T)):
        raise TaskConfigError(f"positions must be a list of indices in [0, {T}), got "
                              f"{pos.tolist()}")
    ids = input_ids.to(device)
    out: torch.Tensor | None = None
    cache = DynamicCache(config=model.config)
    was_training = model.training
    model.eval()
    try:
        for start in range(0, T, chunk):
            stop = min(start + chunk, T)
            position_ids = torch.arange(start, stop, device=device)[None].expand(B, -1)
            res = model(ids[:, start:stop], past_key_values=cache, use_cache=True,
                        position_ids=position_ids)
            cache = res.past_key_values
            if out is None:
                out = res.logits.new_empty((B, pos.numel(), res.logits.shape[-1]))
            here = ((pos >= start) & (pos < stop)).nonzero().flatten()
            out[:, here.to(device)] = res.logits[:, (pos[here] - start).to(device)]
    finally:
        model.train(was_training)
    assert out is not None  # T >= 1: one chunk ran
    return out


def score_sequences(model: torch.nn.Module, task: LongRecallTask, length: int, n_eval: int,
                    eval_batch: int, chunk: int, seed: int,
                    ) -> tuple[torch.Tensor, dict[str, np.ndarray]]:
    """``n_eval`` held-out sequences of ``length`` tokens (evaluation stream of ``seed``, batch
    i at index 1000 + i), read through the chunked forward: the [n_eval, length] token ids and
    per-sequence outcomes [n_eval] over the hypothesis slice -- ``correct`` (1/0),
    ``kl_bits``, ``entropy_abs_err_bits``, ``h_bayes_bits`` and ``bayes_max`` (max_h p_Bayes,
    the Bayes predictor's expected accuracy)."""
    ids, cols = [], {k: [] for k in ("correct", "kl_bits", "entropy_abs_err_bits",
                                     "h_bayes_bits", "bayes_max")}
    device = next(model.parameters()).device
    for i in range(0, n_eval, eval_batch):
        k = min(eval_batch, n_eval - i)
        b = task.sample_at(length, k, stream(seed, Purpose.EVAL, 1000 + i))
        logits = chunked_logits(model, b.input_ids.to(device), chunk=chunk,
                                positions=b.query_pos.tolist())
        s = calibration_stats(slice_log_probs(logits.cpu(), task.hyp_slice), b.oracle,
                              b.targets)
        for key, v in (("correct", s.correct), ("kl_bits", s.kl_bayes_model),
                       ("entropy_abs_err_bits", (s.h_model - s.h_bayes).abs()),
                       ("h_bayes_bits", s.h_bayes), ("bayes_max", b.bayes_max())):
            cols[key].append(v.double().reshape(k, -1).mean(1).numpy())
        ids.append(b.input_ids)
    return torch.cat(ids), {k: np.concatenate(v) for k, v in cols.items()}
