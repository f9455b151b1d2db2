"""What every patching method shares: the target/source pairs in batches, the read positions,
the position masks of a cell and one forward that keeps some sites' activations.

Pairs are token lists (or anything :meth:`InterpModel.encode` takes, or a
:class:`~interp.token_batch.TokenBatch`): pair ``i`` is ``(target[i], source[i])``, of equal
length, so that after left padding a batch's target and source columns line up and a position
(an index over a prompt's real tokens) is the same column in both.
"""

from __future__ import annotations

import warnings
from collections.abc import Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import torch

from .errors import InterpError, PromptError
from .hf_hooks import HFHookBackend
from .layer_resume import RESUME_RTOL, LayerInput, forward_from_layer, resume_error
from .patch_cells import PatchCell, check_pairs
from .positions import check_positions, position_mask
from .sites import Site
from .token_batch import TokenBatch, batch_bounds

if TYPE_CHECKING:
    from .model import InterpModel


@dataclass(frozen=True)
class PairBatch:
    """One batch of pairs: ``pairs`` [b] their indices, ``target`` and ``source`` batches of
    the same shape."""

    pairs: torch.Tensor
    target: TokenBatch
    source: TokenBatch


def tokens_of(model: InterpModel, prompts: Any, role: str) -> list[list[int]]:
    """Token lists of the ``role`` ("target"/"source") prompts; a TokenBatch is unpadded."""
    if isinstance(prompts, TokenBatch):
        return [prompts.input_ids[i, prompts.width - int(n):].tolist()
                for i, n in enumerate(prompts.lengths)]
    if hasattr(prompts, "__len__") and not isinstance(prompts, str) and len(prompts) == 0:
        raise PromptError(f"no pairs to patch (the {role} prompt list is empty)")
    return model.encode(prompts)[0]


def pair_batches(model: InterpModel, target: Any, source: Any, batch_size: int,
                 cells: Sequence[PatchCell] = ()) -> tuple[list[PairBatch], list[int]]:
    """The pairs in batches of at most ``batch_size`` (checked: same count, equal lengths per
    pair, cell positions inside every prompt) and each pair's length."""
    if not isinstance(batch_size, int) or batch_size < 1:
        raise InterpError(f"batch_size must be a positive integer, got {batch_size!r}")
    t = tokens_of(model, target, "target")
    s = tokens_of(model, source, "source")
    check_pairs([len(x) for x in t], [len(x) for x in s], cells)
    lengths = [len(x) for x in t]
    out = []
    for lo, hi in batch_bounds(lengths, 0, len(t), batch_size):
        idx = list(range(lo, hi))
        out.append(PairBatch(torch.tensor(idx), model.batch(t[lo:hi], idx),
                             model.batch(s[lo:hi], idx)))
    return out, lengths


@dataclass(frozen=True)
class Readout:
    """Where a score reads the logits: ``positions`` (indices over real tokens, negative from
    the end) or None for each prompt's last token."""

    positions: tuple[int, ...] | None = None

    @classmethod
    def of(cls, read_positions: int | Sequence[int] | None, lengths: Sequence[int]) -> Readout:
        if read_positions is None:
            return cls(None)
        pos = (int(read_positions),) if isinstance(read_positions, int) else \
            tuple(int(p) for p in read_positions)
        if not pos:
            raise InterpError("read_positions is empty: give indices or None (the last token)")
        check_positions(pos, lengths)
        return cls(pos)

    def columns(self, batch: TokenBatch) -> torch.Tensor:
        """[B, Q] padded columns of the read positions."""
        if self.positions is None:
            return torch.full((batch.size, 1), batch.width - 1, dtype=torch.long)
        p = torch.tensor(self.positions, dtype=torch.long)[None, :].expand(batch.size, -1)
        p = torch.where(p < 0, p + batch.lengths[:, None], p)
        return p + batch.offsets[:, None]

    def keep(self, batch: TokenBatch) -> int:
        """``logits_to_keep``: the last columns that hold every read position."""
        return batch.width - int(self.columns(batch).min())

    def gather(self, x: torch.Tensor, batch: TokenBatch) -> torch.Tensor:
        """[B, Q, ...] rows of ``x`` [B, k, ...] (the last ``k`` columns) at the read
        positions, as float32 (float64 for a float64 model)."""
        cols = self.columns(batch).to(x.device) - (batch.width - x.shape[1])
        idx = cols.reshape(*cols.shape, *([1] * (x.ndim - 2))).expand(-1, -1, *x.shape[2:])
        out = x.gather(1, idx)
        return out.to(torch.promote_types(out.dtype, torch.float32))


def cell_mask(batch: TokenBatch, position: int | None) -> torch.Tensor:
    """[B, T] bool: the real tokens (``position`` None) or the one position of every row."""
    spec: str | tuple[int, ...] = "all" if position is None else (position,)
    return position_mask(spec, batch.lengths, batch.width)


def run_keeping(model: InterpModel, batch: TokenBatch, sites: Sequence[str | Site], keep: int,
                ) -> tuple[torch.Tensor, dict[str, torch.Tensor]]:
    """One forward (no gradients): logits [B, keep, V] and each site's activation (detached
    copies, on the model's device, in the site's layout)."""
    kept: dict[str, torch.Tensor] = {}

    def keeper(name: str) -> Any:
        def fn(x: torch.Tensor) -> None:
            kept[name] = x.detach().clone()
        return fn

    names = [s.name if isinstance(s, Site) else s for s in sites]
    with model.hooks([(n, keeper(n)) for n in dict.fromkeys(names)]):
        logits = model.forward(batch, logits_to_keep=keep)
    return logits, kept


def replace_fn(source: torch.Tensor, mask: torch.Tensor, head: int | None) -> Any:
    """A site hook writing ``source`` [B, T, ...] into the activation where ``mask`` [B, T] is
    True (only head ``head`` of a per-head site when given); the rest is left bit-identical."""
    def fn(x: torch.Tensor) -> torch.Tensor:
        if x.shape != source.shape:
            raise InterpError(f"source activation {tuple(source.shape)} does not fit "
                              f"{tuple(x.shape)}: target and source batches differ")
        m = mask.to(x.device)
        y = x.clone()
        if head is None:
            y[m] = source[m].to(y.dtype)
        else:
            y[:, :, head][m] = source[:, :, head][m].to(y.dtype)
        return y
    return fn


class Resumer:
    """Runs a batch from a layer on: resumed where that reproduces the full pass."""

    def __init__(self, model: InterpModel, enabled: bool):
        self.model = model
        self.enabled = enabled and isinstance(model.backend, HFHookBackend)
        self.checked = False

    def check(self, cached: dict[int, LayerInput], full: torch.Tensor) -> None:
        """On the first batch: the resumed clean pass from the latest cached layer must match
        the full pass to ``RESUME_RTOL`` (relative), else every later pass runs in full."""
        if self.checked or not self.enabled or not cached:
            return
        self.checked = True
        layer = max(cached)
        err = resume_error(self.model, cached[layer], full)
        if err > RESUME_RTOL:
            self.enabled = False
            warnings.warn(f"resuming at layer {layer} changed the clean logits by {err:.2g} "
                          "(relative); patching runs full passes", stacklevel=3)

    def run(self, batch: PairBatch, cached: dict[int, LayerInput], layer: int, keep: int,
            ) -> torch.Tensor:
        if self.enabled and layer in cached:
            return forward_from_layer(self.model, cached[layer], logits_to_keep=keep)
        return self.model.forward(batch.target, logits_to_keep=keep)


def read_logits(model: InterpModel, prompts: Any, read_positions: int | Sequence[int] | None = None,
                batch_size: int = 8) -> torch.Tensor:
    """Logits [N, Q, V] of ``prompts`` at ``read_positions`` (indices over real tokens; None:
    the last token), float32 on the CPU: e.g. the clean run's distribution for
    :func:`interp.kl_score`.

    Example:
        >>> import transformers
        >>> from bayesgeom import interp
        >>> cfg = transformers.GPT2Config(n_layer=1, n_head=2, n_embd=8, vocab_size=11)
        >>> m = interp.InterpModel(transformers.GPT2LMHeadModel(cfg))
        >>> read_logits(m, [[1, 2, 3], [4, 5]], read_positions=[0, -1]).shape
        torch.Size([2, 2, 11])
    """
    tokens = tokens_of(model, prompts, "reference")
    read = Readout.of(read_positions, [len(t) for t in tokens])
    out = []
    for lo, hi in batch_bounds([len(t) for t in tokens], 0, len(tokens), batch_size):
        batch = model.batch(tokens[lo:hi])
        logits = model.forward(batch, logits_to_keep=read.keep(batch))
        out.append(read.gather(logits, batch).cpu())
    return torch.cat(out)
