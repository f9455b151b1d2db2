"""Path patching: the direct path from a sender to a receiver, every other component frozen at
its target-run value.

A *sender* is what one layer writes into the residual stream: ``attn_out.L`` or ``mlp_out.L``
(a :class:`PatchCell`, at one position or all), or one head's share of it, ``attn.L.z`` with a
head: that head's output through its slice of the out-projection (the module itself applied to
the head's change alone, so the projection's bias cancels). The change Δ = sender(source) −
sender(target) is added to the *receiver*, and only there:

* ``"logits"``: the target's final residual stream plus Δ through the model's own final norm and
  output embedding (:func:`interp.unembed`), at the read positions: the sender's direct effect on
  the output, no later block seeing the change;
* ``"resid_pre.L'"`` (L' > L): the target's residual stream entering block L' plus Δ, then
  blocks L'.. run as usual: the path sender → every component from L' on, the blocks between
  sender and receiver frozen.

Δ is additive only where a block adds its sublayers' outputs to the residual stream; this is
checked on the first batch (``resid_post.L`` = ``resid_pre.L`` + ``attn_out.L`` + ``mlp_out.L``
to float rounding) and a family that normalises a sublayer's output first (Gemma's post-norms)
is refused in one line, as is a model whose logits are not its final norm and head alone.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import torch

from ..records.progress import tqdm
from .errors import InterpError, UnknownSiteError
from .layer_resume import LayerInput
from .model import InterpModel
from .patch_cells import PatchCell, check_cells
from .patch_inputs import PairBatch, Readout, Resumer, cell_mask, pair_batches, run_keeping
from .patch_result import PatchResult
from .patch_scores import PairScore, ScoreFn, as_pair_score, evaluate, metric_names
from .sites import Site
from .unembed import unembed, unembed_error

SENDER_KINDS = ("attn_out", "mlp_out", "attn.z")
#: how far ``resid_post`` may be from ``resid_pre + attn_out + mlp_out`` (relative) and
#: ``unembed(final residual)`` from the logits
ADDITIVE_RTOL = 1e-4


def _senders(model: InterpModel, sender: PatchCell | str | Sequence[PatchCell | str],
             ) -> list[PatchCell]:
    raw = [sender] if isinstance(sender, PatchCell | str) else list(sender)
    cells = [PatchCell.at(s) if isinstance(s, str) else s for s in raw]
    for c in check_cells(cells, model):
        if c.kind not in SENDER_KINDS:
            raise UnknownSiteError(f"sender {c.label}: a path starts at attn_out.L, mlp_out.L or "
                                   "one head's attn.L.z")
    return cells


def _receiver(model: InterpModel, receiver: str, senders: list[PatchCell]) -> int | None:
    """The receiving layer (None: the logits)."""
    if receiver == "logits":
        return None
    site = model.resolve_sites(receiver)[0]
    if site.kind != "resid_pre" or site.layer is None:
        raise UnknownSiteError(f"receiver {receiver!r}: give 'logits' or resid_pre.L")
    late = [c.label for c in senders if c.layer >= site.layer]
    if late:
        raise UnknownSiteError(f"receiver {site.name} is not downstream of sender {late[0]}: "
                               "a path runs to a later layer's input")
    return site.layer


def _delta(model: InterpModel, c: PatchCell, src: torch.Tensor, tgt: torch.Tensor,
           mask: torch.Tensor) -> torch.Tensor:
    """[B, T, D]: what the sender writes into the residual stream, source minus target, at the
    cell's positions (zero elsewhere)."""
    m = mask.to(src.device)
    d = (src - tgt) * m.reshape(*m.shape, *([1] * (src.ndim - 2)))
    if c.kind != "attn.z":
        return d
    if c.head is not None:
        only = torch.zeros_like(d)
        only[:, :, c.head] = d[:, :, c.head]
        d = only
    proj = model.modules.out_proj(Site("attn_out", c.layer))
    flat = d.flatten(-2)
    with torch.no_grad():
        return proj(flat) - proj(torch.zeros_like(flat))


def _check_additive(model: InterpModel, batch: PairBatch, layers: set[int]) -> None:
    sites = [f"{k}.{L}" for L in sorted(layers) for k in ("resid_pre", "attn_out", "mlp_out",
                                                           "resid_post")]
    _, a = run_keeping(model, batch.target, sites, 1)
    for L in sorted(layers):
        post = a[f"resid_post.{L}"].float()
        parts = a[f"resid_pre.{L}"].float() + a[f"attn_out.{L}"].float() \
            + a[f"mlp_out.{L}"].float()
        err = float((parts - post).abs().max() / post.abs().max().clamp(min=1e-12))
        if err > ADDITIVE_RTOL:
            raise InterpError(
                f"path patching needs blocks that add attn_out and mlp_out to the residual "
                f"stream; {model.info.family} block {L} does not (relative error {err:.2g}: a "
                "norm after a sublayer?)")


def path_patch(
    model: InterpModel,
    target: Any,
    source: Any,
    sender: PatchCell | str | Sequence[PatchCell | str],
    receiver: str,
    score: PairScore | ScoreFn,
    *,
    read_positions: int | Sequence[int] | None = None,
    batch_size: int = 8,
    progress: bool = False,
) -> PatchResult:
    """The direct-path patch of each sender to ``receiver``, scored per pair.

    ``target``, ``source``, ``score``, ``read_positions``, ``batch_size``: as in
    :func:`interp.activation_patch`; ``sender``: one or more :class:`PatchCell` (or site names)
    of ``attn_out.L``, ``mlp_out.L`` or ``attn.L.z`` with a head; ``receiver``: ``"logits"``
    or ``"resid_pre.L'"`` after every sender. Returns a :class:`PatchResult` with one cell per
    sender (``method="path"``, ``receiver`` set).

    Example:
        >>> import transformers
        >>> from bayesgeom import interp
        >>> cfg = transformers.GPT2Config(n_layer=2, n_head=2, n_embd=16, vocab_size=11)
        >>> m = interp.InterpModel(transformers.GPT2LMHeadModel(cfg))
        >>> senders = [interp.PatchCell("attn.0.z", 0, head=h) for h in (0, 1)]
        >>> r = interp.path_patch(m, [[1, 2, 3]], [[4, 2, 3]], senders, "logits",
        ...                       interp.logit_diff_score(6, 7))
        >>> r.method, r.receiver, tuple(r.values.shape)
        ('path', 'logits', (2, 1, 1))
    """
    senders = _senders(model, sender)
    into = _receiver(model, receiver, senders)
    pscore = as_pair_score(score)
    batches, lengths = pair_batches(model, target, source, batch_size, senders)
    read = Readout.of(read_positions, lengths)
    sites = list(dict.fromkeys(c.site for c in senders))
    final = f"resid_post.{model.n_layers - 1}"
    entry = final if into is None else f"resid_pre.{into}"
    resumer = Resumer(model, into is not None)
    values: torch.Tensor | None = None
    tgt_rows, src_rows = [], []
    bar = tqdm(total=len(senders) * len(batches), desc="path patching", unit="sender",
               disable=not progress, leave=False)
    for b, pb in enumerate(batches):
        keep = read.keep(pb.target)
        src_logits, src_acts = run_keeping(model, pb.source, sites, keep)
        tgt_logits, tgt_acts = run_keeping(model, pb.target, [*sites, entry], keep)
        tgt_read = read.gather(tgt_logits, pb.target)
        if b == 0:
            _check_additive(model, pb, {c.layer for c in senders})
            if into is None:
                err = unembed_error(model, read.gather(tgt_acts[final], pb.target), tgt_read)
                if err > ADDITIVE_RTOL:
                    raise InterpError(
                        f"{model.info.name}'s logits are not its final norm and output embedding "
                        f"alone (relative error {err:.2g}: a logit cap or scale?); use "
                        "receiver='resid_pre.L'")
        tgt_rows.append(evaluate(pscore, tgt_read, pb.pairs))
        src_rows.append(evaluate(pscore, read.gather(src_logits, pb.source), pb.pairs))
        if values is None:
            values = torch.empty(len(senders), len(lengths), tgt_rows[-1].shape[1],
                                 dtype=torch.float64)
        cached = {} if into is None else {into: LayerInput(into, pb.target, tgt_acts[entry])}
        resumer.check(cached, tgt_logits)
        for i, c in enumerate(senders):
            d = _delta(model, c, src_acts[c.site], tgt_acts[c.site], cell_mask(pb.target,
                                                                               c.position))
            if into is None:
                with torch.no_grad():
                    logits = unembed(model, read.gather(tgt_acts[final] + d, pb.target))
                patched = logits.to(torch.promote_types(logits.dtype, torch.float32))
            else:
                add = _adder(d)
                with model.hooks([(entry, add)]):
                    patched = read.gather(resumer.run(pb, cached, into, keep), pb.target)
            values[i, pb.pairs] = evaluate(pscore, patched, pb.pairs).cpu()
            bar.update(1)
    bar.close()
    assert values is not None
    return PatchResult("path", tuple(senders), metric_names(pscore, values.shape[2]), values,
                       torch.cat(tgt_rows).cpu(), torch.cat(src_rows).cpu(),
                       receiver="logits" if into is None else entry)


def _adder(delta: torch.Tensor) -> Any:
    def fn(x: torch.Tensor) -> torch.Tensor:
        return x + delta.to(x.device, x.dtype)
    return fn
