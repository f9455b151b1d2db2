"""Activation patching: run the target prompts with one activation replaced by the source
prompts' (a cell: site × layer × head × position), for every cell of a grid, and score the
patched logits.

Two directions, from a clean and a corrupted prompt set (:func:`patch_roles`):

* **denoising** (target = corrupt, source = clean): which clean activation restores the clean
  behaviour, i.e. is *sufficient*;
* **noising** (target = clean, source = corrupt): which corrupt activation breaks it, i.e. is
  *necessary*.

Cost: the source runs once per batch of pairs (every site the cells need is kept), the target
once (its score is the ``target`` baseline, and the residual stream entering each patched layer
is kept); each cell is then one forward that starts at the cell's layer
(:mod:`interp.layer_resume`: a patch at layer L cannot change layers < L), checked once against
the full pass and replaced by full passes where the shortcut does not reproduce it (or on the
TransformerLens backend). Only the logits at the read positions are computed.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, Literal

import torch

from ..records.progress import tqdm
from .layer_resume import LayerInput
from .model import InterpModel
from .patch_cells import PatchCell, check_cells
from .patch_inputs import Readout, Resumer, cell_mask, pair_batches, replace_fn, run_keeping
from .patch_result import PatchResult
from .patch_scores import PairScore, ScoreFn, as_pair_score, evaluate, metric_names

Direction = Literal["denoising", "noising"]


def patch_roles(clean: Any, corrupt: Any, direction: Direction = "denoising") -> tuple[Any, Any]:
    """(target, source) for a patching ``direction``: ``"denoising"`` patches clean activations
    into the corrupt run (target = corrupt), ``"noising"`` corrupt ones into the clean run.

    Example:
        >>> patch_roles("clean", "corrupt"), patch_roles("clean", "corrupt", "noising")
        (('corrupt', 'clean'), ('clean', 'corrupt'))
    """
    if direction == "denoising":
        return corrupt, clean
    if direction == "noising":
        return clean, corrupt
    from .errors import InterpError

    raise InterpError(f"unknown direction {direction!r}: 'denoising' or 'noising'")


def activation_patch(
    model: InterpModel,
    target: Any,
    source: Any,
    cells: Sequence[PatchCell],
    score: PairScore | ScoreFn,
    *,
    read_positions: int | Sequence[int] | None = None,
    batch_size: int = 8,
    resume: bool = True,
    progress: bool = False,
) -> PatchResult:
    """Patch each cell of ``cells`` from ``source`` into ``target`` and score the result.

    ``target``, ``source``: N prompts each (token lists, texts, an [N, T] tensor or a
    :class:`~interp.token_batch.TokenBatch`), pair ``i`` of equal length (positions are patched
    index for index); ``cells``: from :func:`interp.cell_grid`; ``score``: logits [B, Q, V] at
    ``read_positions`` (indices over real tokens; None: the last token) -> [B] or [B, m]
    (:mod:`interp.patch_scores`); ``batch_size``: pairs per forward; ``resume``: start each
    patched pass at the cell's layer. Returns a :class:`PatchResult` ([n_cells, N, m] values,
    the unpatched target and source scores).

    Example:
        >>> import transformers
        >>> from bayesgeom import interp
        >>> cfg = transformers.GPT2Config(n_layer=2, n_head=2, n_embd=16, vocab_size=11)
        >>> m = interp.InterpModel(transformers.GPT2LMHeadModel(cfg))
        >>> clean, corrupt = [[1, 2, 3, 4]], [[1, 5, 3, 4]]
        >>> target, source = interp.patch_roles(clean, corrupt)  # denoising
        >>> cells = interp.cell_grid(m, "resid_pre", positions="each", length=4)
        >>> r = interp.activation_patch(m, target, source, cells, interp.logit_diff_score(6, 7))
        >>> r.values.shape  # 2 layers x 4 positions, 1 pair, 1 metric
        torch.Size([8, 1, 1])
        >>> bool(r.effect()[0, 0] == 0), bool((r.values[1, 0] == r.source[0]).all())
        (True, True)
    """
    cells = check_cells(cells, model)
    pscore = as_pair_score(score)
    batches, lengths = pair_batches(model, target, source, batch_size, cells)
    read = Readout.of(read_positions, lengths)
    sites = list(dict.fromkeys(c.site for c in cells))
    layers = sorted({c.layer for c in cells} - {0})
    resumer = Resumer(model, resume)
    values: torch.Tensor | None = None
    tgt_rows, src_rows = [], []
    bar = tqdm(total=len(cells) * len(batches), desc="activation patching", unit="pass",
               disable=not progress, leave=False)
    for pb in batches:
        keep = read.keep(pb.target)
        src_logits, src_acts = run_keeping(model, pb.source, sites, keep)
        rec = [f"resid_pre.{L}" for L in layers] if resumer.enabled else []
        tgt_logits, kept = run_keeping(model, pb.target, rec, keep)
        cached = {L: LayerInput(L, pb.target, kept[f"resid_pre.{L}"]) for L in layers
                  if f"resid_pre.{L}" in kept}
        resumer.check(cached, tgt_logits)
        tgt_rows.append(evaluate(pscore, read.gather(tgt_logits, pb.target), pb.pairs))
        src_rows.append(evaluate(pscore, read.gather(src_logits, pb.source), pb.pairs))
        if values is None:
            values = torch.empty(len(cells), len(lengths), tgt_rows[-1].shape[1],
                                 dtype=torch.float64)
        masks = {p: cell_mask(pb.target, p) for p in {c.position for c in cells}}
        for i, c in enumerate(cells):
            fn = replace_fn(src_acts[c.site], masks[c.position], c.head)
            with model.hooks([(c.site, fn)]):
                logits = resumer.run(pb, cached, c.layer, keep)
            values[i, pb.pairs] = evaluate(pscore, read.gather(logits, pb.target), pb.pairs).cpu()
            bar.update(1)
    bar.close()
    assert values is not None
    target_scores = torch.cat(tgt_rows).cpu()
    return PatchResult("activation", tuple(cells), metric_names(pscore, values.shape[2]), values,
                       target_scores, torch.cat(src_rows).cpu())
