"""Many direction edits in one forward: the batch repeated K times, replica k edited along its
own direction.

A null test edits the same prompts along the axis and along K control directions with the same
operation (a cut, keep-only or shift of one condition). Run one edit at a time, each pass pays
the model's fixed per-forward cost (Python, hooks, small kernels) again; a tiny model's pass is
almost all of that. :func:`stacked_edits` applies K :class:`~interp.DirectionEdit` s that differ
only in their direction to a batch :func:`repeat_batch` has repeated K times (rows
``k·B .. (k+1)·B`` are replica k), so one forward gives the K edited passes; each replica's
rows are the rows the one-edit pass computes, to float rounding (the edit functions of
:mod:`interp.edits` broadcast over the replica axis). Finiteness is checked as
:func:`interp.intervene` checks it: an edit that makes finite activations non-finite, or
non-finite logits after it, raise
:class:`~interp.NonFiniteActivationError`. No nil-effect report: a caller that wants one uses
:func:`interp.intervene`.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from typing import TYPE_CHECKING

import torch

from .errors import DirectionShapeError, InterpError, NonFiniteActivationError
from .finite import all_finite, nonfinite_rows
from .intervention_kinds import DirectionEdit
from .positions import normalise_positions
from .token_batch import TokenBatch

if TYPE_CHECKING:
    from .model import InterpModel


def repeat_batch(batch: TokenBatch, k: int) -> TokenBatch:
    """``batch`` [B, T] repeated ``k`` times along the rows -> [k·B, T] (replica-major; each
    row keeps its prompt index).

    Example:
        >>> from bayesgeom.interp.token_batch import left_pad
        >>> b = repeat_batch(left_pad([[1, 2], [3]], pad_id=0), 3)
        >>> b.size, b.input_ids[:, -1].tolist(), b.prompt_index.tolist()
        (6, [2, 3, 2, 3, 2, 3], [0, 1, 0, 1, 0, 1])
    """
    return TokenBatch(batch.input_ids.repeat(k, 1), batch.attention_mask.repeat(k, 1),
                      batch.position_ids.repeat(k, 1), batch.lengths.repeat(k),
                      batch.prompt_index.repeat(k))


def stackable(edits: Sequence[DirectionEdit]) -> bool:
    """True when ``edits`` differ at most in their directions: one site, operation, parameters
    and positions, no ``heads``; what :func:`stacked_edits` can run as replicas of one batch.

    Example:
        >>> import torch
        >>> from bayesgeom.interp.edits import project_out, shift
        >>> a = DirectionEdit("attn.0.v", torch.ones(4), project_out, fraction=0.5)
        >>> b = DirectionEdit("attn.0.v", torch.arange(1.0, 5.0), project_out, fraction=0.5)
        >>> stackable([a, b]), stackable([a, DirectionEdit("attn.0.v", torch.ones(4), shift,
        ...                                                 amount=1.0)])
        (True, False)
    """
    if not edits or not all(isinstance(e, DirectionEdit) for e in edits):
        return False
    first = edits[0]
    return all(e.site == first.site and e.operation is first.operation
               and e.params == first.params and e.positions == first.positions
               and e.heads is None for e in edits)


def _units(edits: Sequence[DirectionEdit], width: int, site: str) -> torch.Tensor:
    """[K, F] float32 unit directions, normalised in float64 as one edit normalises its own."""
    rows = []
    for e in edits:
        e.check()
        v = e.vector_tensor().to("cpu", torch.float64).reshape(-1)
        if v.numel() != width:
            raise DirectionShapeError(f"{e.label()} at {site}: vector must have {width} entries, "
                                      f"got {v.numel()}")
        norm = v.norm()
        if float(norm) == 0.0:
            raise DirectionShapeError(f"{e.label()} at {site}: direction has zero norm")
        rows.append(v / norm)
    u = torch.stack(rows).to(torch.float32)
    if not bool(torch.isfinite(u).all()):
        raise DirectionShapeError(f"{edits[0].label()} at {site}: a vector overflows float32")
    return u


@contextmanager
def stacked_edits(model: InterpModel, replicas: Sequence[Sequence[DirectionEdit]],
                  ) -> Iterator[int]:
    """While open, a forward of a batch repeated K = ``len(replicas)`` times
    (:func:`repeat_batch`) edits replica k with ``replicas[k]`` (one edit per site; replica k's
    edit at a site differs from the others' only in its direction, :func:`stackable`). Yields K.
    Hooks are removed on exit, also when the body raises.

    Example:
        >>> import torch, transformers
        >>> from bayesgeom import interp
        >>> from bayesgeom.interp.edits import project_out
        >>> cfg = transformers.GPT2Config(n_layer=1, n_head=2, n_embd=8, vocab_size=11)
        >>> m = interp.InterpModel(transformers.GPT2LMHeadModel(cfg).eval())
        >>> dirs = torch.eye(8)[:3]
        >>> reps = [[DirectionEdit("resid_post.0", d, project_out)] for d in dirs]
        >>> b = m.batch([[1, 2, 3], [4, 5]])
        >>> with stacked_edits(m, reps) as k:
        ...     z = m.forward(repeat_batch(b, k), logits_to_keep=1)
        >>> with m.intervene(*reps[2]):
        ...     one = m.forward(b, logits_to_keep=1)
        >>> z.shape[0], bool(torch.allclose(z[4:], one, atol=1e-5))
        (6, True)
    """
    k = len(replicas)
    if k == 0 or len({len(r) for r in replicas}) != 1:
        raise InterpError("stacked_edits needs one or more replicas with the same number of "
                          "edits")
    handles = []
    labels: list[str] = []
    try:
        for j in range(len(replicas[0])):
            edits = [r[j] for r in replicas]
            if not stackable(edits):
                raise InterpError("stacked edits must differ only in their directions (one "
                                  "site, operation, parameters and positions; no heads)")
            for site in model.resolve_sites(edits[0].site):
                if not site.writable:
                    raise InterpError(f"site {site.name} is read-only; interventions cannot "
                                      "write to it")
                width = int(torch.tensor(model.feature_shape(site)).prod())
                fn = _hook(model, edits, _units(edits, width, site.name), site.name)
                handles.append(model.add_hook(site, fn))
                labels.append(f"{edits[0].label()} at {site.name} (stacked ×{k})")
        model.checked_edits.extend(labels)
        yield k
    finally:
        for h in reversed(handles):
            h.remove()
        for label in labels:
            if label in model.checked_edits:
                model.checked_edits.remove(label)


def _hook(model: InterpModel, edits: Sequence[DirectionEdit], units: torch.Tensor, site: str,
          ) -> Callable[[torch.Tensor], torch.Tensor | None]:
    spec = normalise_positions(edits[0].positions)
    edit = edits[0]
    k = len(edits)
    cache: dict[torch.device, torch.Tensor] = {}

    def fn(x: torch.Tensor) -> torch.Tensor | None:
        if x.shape[0] % k:
            raise InterpError(f"stacked edits at {site}: a batch of {x.shape[0]} rows is not "
                              f"{k} replicas (run repeat_batch(batch, {k}))")
        mask = model.position_mask(spec, x.shape[1], x.shape[0]).to(x.device)  # [K·B, T]
        if not bool(mask.any()):
            return None
        u = cache.setdefault(x.device, units.to(x.device))
        xf = x.float().reshape(k, x.shape[0] // k, x.shape[1], -1)  # [K, B, T, F]
        new = edit.edit(xf, u[:, None, None, :])
        keep = mask.reshape(k, -1, x.shape[1], 1)
        out = torch.where(keep, new, xf).reshape(x.shape).to(x.dtype)
        if all_finite(out):
            return out
        gone = ~nonfinite_rows(xf.reshape(-1, xf.shape[-1])) & nonfinite_rows(
            out.float().reshape(-1, xf.shape[-1]))
        if bool(gone.any()):
            row = int(torch.nonzero(gone)[0])
            b, t = divmod(row, x.shape[1])
            raise NonFiniteActivationError(
                f"{edit.label()} at {site} (replica {b // (x.shape[0] // k)}) turned finite "
                f"activations into NaN/inf at batch row {b}, column {t}; use a smaller scale or "
                "shift, or a wider dtype")
        return out

    return fn
