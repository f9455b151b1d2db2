"""``capture``: read named sites at chosen positions for many prompts, batch by batch.

Hooks are placed only on the requested sites; each copies only the selected rows (e.g. the last
token) to the CPU in the store dtype, straight into buffers allocated once per shard, so nothing
else is retained and no per-batch copies are left to fragment the heap (measured: streaming
2,000 prompts peaked at 1.38x the memory of one forward with per-batch copies). With
``out=DIR`` the rows are streamed to safetensors shards (see :mod:`interp.activation_store`) and
an interrupted run resumes; in memory, all prompts form one shard. A store directory is held
(:func:`records.hold`, an OS-level lock released even on ``kill -9``) for the whole capture: a
second process capturing into the same ``out`` gets a one-line ``RunBusyError`` at once instead
of racing the first; a full disk or read-only folder is a one-line ``FileFault``.
Next-token entropy (bits) is recorded at every captured position; with ``positions="last"`` the
unembedding runs on the last position only. For a model with a task attached whose
``hyp_slice`` names the hypothesis tokens (a wind tunnel, trained on that slice alone) the
entropy is over that slice; otherwise over the whole vocabulary. The store says which
(``entropy_over``, ``entropy_ids``). ``entropy=False`` records none (NaN, ``entropy_over``
``"none"``) and unembeds the last position only, whatever the positions. Where logits are needed
at more positions, batches are cut so that one forward's logits stay within
:data:`LOGITS_BUDGET_BYTES` (a 262,144-token vocabulary costs 1 MiB of float32 per token).
"""

from __future__ import annotations

import contextlib
import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pandas as pd
import torch

from ..infotheory import entropy_bits_from_logits
from ..infotheory.measures import CHUNK_ELEMENTS
from ..records import hold, run_manifest
from ..records.progress import tqdm
from .activation_store import ActivationStore, ShardWriter
from .errors import InterpError, ModelNotLoadedError, NonFiniteActivationError
from .finite import all_finite, first_nonfinite
from .model import InterpModel
from .positions import PositionSpec, RowSelection, check_positions, normalise_positions
from .positions import select_rows as _select_rows
from .prompt_count import FirstBatchClock, check_prompt_count
from .prompts import Prompts, prompts_sha256
from .sites import Site
from .store_layout import auto_prompts_per_shard, n_rows, part_shards
from .token_batch import TokenBatch, batch_bounds

#: the most memory one forward's logits may take where every position's are needed
LOGITS_BUDGET_BYTES = 128 * 2**20
STORE_DTYPES = {"float32": torch.float32, "float16": torch.float16, "bfloat16": torch.bfloat16}
_EXTRA_VERSIONS = ("tokenizers", "accelerate", "transformer-lens", "gguf", "pyarrow", "tqdm")


@dataclass
class _Rows:
    """The rows of the current shard: one buffer per site and index field [n_rows, ...],
    filled batch by batch (``offset``: the current batch's first row)."""

    store_dtype: torch.dtype
    check_finite: bool
    pattern_width: int
    #: the vocabulary ids next-token entropy is over (None: all of them)
    entropy_ids: slice | None = None
    #: record next-token entropy (False: NaN, and only the last position's logits are needed)
    entropy: bool = True
    batch: TokenBatch | None = None
    rows: RowSelection | None = None
    buffers: dict[str, torch.Tensor] = field(default_factory=dict)
    n_rows: int = 0
    offset: int = 0

    def start_shard(self, n_rows: int) -> None:
        self.buffers, self.n_rows, self.offset = {}, n_rows, 0

    def reader(self, site: Site) -> Callable[[torch.Tensor], None]:
        def fn(x: torch.Tensor) -> None:
            assert self.batch is not None and self.rows is not None
            if site.kind == "attn.pattern":
                y = self._pattern(x)
            else:
                shift = self.batch.width - x.shape[1]  # logits may cover the last columns only
                y = x[self.rows.batch.to(x.device), (self.rows.column - shift).to(x.device)]
            self.put(site.name, y)

        return fn

    def _pattern(self, x: torch.Tensor) -> torch.Tensor:
        """[R, H, W]: query rows, keys re-indexed to the prompt's own tokens, zero-padded."""
        assert self.batch is not None and self.rows is not None
        r = self.rows
        y = x[r.batch.to(x.device), :, r.column.to(x.device), :]  # [R, H, T]
        width = self.batch.width
        key = self.batch.offsets[r.batch][:, None] + torch.arange(self.pattern_width)[None, :]
        valid = key < width
        key = key.clamp(max=width - 1).to(x.device)
        out = y.gather(-1, key[:, None, :].expand(-1, y.shape[1], -1))
        return out * valid[:, None, :].to(out.device, out.dtype)

    def put(self, name: str, y: torch.Tensor, dtype: torch.dtype | None = None,
            check: bool = True) -> None:
        """Copy the batch's rows ``y`` [R, ...] into the shard buffer of ``name`` (in the store
        dtype unless ``dtype``; checked finite with ``check_finite`` unless ``check`` is off)."""
        buf = self.buffers.get(name)
        if buf is None:
            buf = torch.empty((self.n_rows, *y.shape[1:]), dtype=dtype or self.store_dtype)
            self.buffers[name] = buf
        part = buf[self.offset:self.offset + y.shape[0]]
        part.copy_(y.detach())
        if check and self.check_finite and part.is_floating_point() \
                and not all_finite(part):
            self.raise_nonfinite(name, part)

    def raise_nonfinite(self, name: str, y: torch.Tensor) -> None:
        """Raise naming the first prompt and position of the batch's rows ``y`` that hold
        NaN or inf."""
        assert self.batch is not None and self.rows is not None
        found = first_nonfinite(y)
        assert found is not None, f"{name}: no non-finite row to report"
        (r,), kind, n_bad = found
        prompt = int(self.batch.prompt_index[self.rows.batch[r]])
        pos = int(self.rows.position[r])
        raise NonFiniteActivationError(
            f"{kind} in site {name} at prompt {prompt}, position {pos} "
            f"({n_bad} of {len(y)} captured rows in this batch are non-finite)"
        )


VOCABULARY, HYPOTHESIS_SLICE, NO_ENTROPY = "vocabulary", "hypothesis slice", "none"


def entropy_slice(model: InterpModel) -> slice | None:
    """The vocabulary ids a next-token entropy is taken over: the attached task's hypothesis
    slice (duck-typed ``model.task.hyp_slice``; a wind tunnel is only ever trained on it), or
    None for the whole vocabulary."""
    hyp = getattr(getattr(model, "task", None), "hyp_slice", None)
    return hyp if isinstance(hyp, slice) else None


def _entropy_over(hyp: slice | None, entropy: bool = True) -> dict[str, Any]:
    """The store's record of what ``entropy_bits`` is over."""
    if not entropy:
        return {"entropy_over": NO_ENTROPY, "entropy_ids": None}
    if hyp is None:
        return {"entropy_over": VOCABULARY, "entropy_ids": None}
    return {"entropy_over": HYPOTHESIS_SLICE, "entropy_ids": [hyp.start, hyp.stop, hyp.step]}


def capture(
    model: InterpModel,
    prompts: Prompts,
    sites: str | Sequence[str],
    positions: PositionSpec = "last",
    *,
    batch_size: int = 8,
    out: str | Path | None = None,
    prompts_per_shard: int | None = None,
    store_dtype: str | torch.dtype = "float32",
    check_finite: bool = True,
    progress: bool = True,
    seed: int = 0,
    restart: bool = False,
    entropy: bool = True,
    part: tuple[int, int] | None = None,
) -> ActivationStore:
    """Capture ``sites`` at ``positions`` for every prompt.

    ``model``: a loaded :class:`InterpModel` (from :func:`interp.load` or
    ``bayesgeom.open_model``, which also opens wind-tunnel runs with their task); a name or path
    is refused with :class:`ModelNotLoadedError`. ``prompts``: strings, token lists, an [N, T]
    id tensor or any object with an ``input_ids`` tensor (a wind-tunnel ``TaskBatch``).
    ``positions``: ``"last"``, ``"all"`` or indices into each prompt (negative from its end).
    ``out``: stream to this directory (resumes an interrupted capture; a different capture
    there is refused unless ``restart``, which starts it over) instead of keeping rows in
    memory. ``entropy``: record next-token entropy at each captured row (else NaN, and no
    logits beyond the last position are computed). ``part=(k, n)`` (with ``out``): capture
    only the k-th of n contiguous runs of whole shards (:func:`records.shard_bounds`; shards
    of at most ⌈prompts / n⌉ prompts unless ``prompts_per_shard`` is given), each shard's
    rows exactly those the whole capture writes there (the same batches), so that n workers'
    parts merge into it (:func:`interp.store_parts.merge_parts`). Returns the
    :class:`ActivationStore`; its rows are prompt-major, then position order.

    Example (a name is refused: load the model first):
        >>> from bayesgeom import interp
        >>> model = interp.load()  # the embedded SmolLM2-135M, offline  # doctest: +SKIP
        >>> store = interp.capture(model, ["The capital is"], ["attn.-1.v"])  # doctest: +SKIP
        >>> try:
        ...     interp.capture("smollm2-135m-instruct", ["Hi"], ["attn.-1.v"])
        ... except interp.ModelNotLoadedError as e:
        ...     print(e)
        capture takes a loaded InterpModel, got 'smollm2-135m-instruct'; load it first with
        interp.load(...) or bayesgeom.open_model(...)
    """
    if not isinstance(model, InterpModel):
        shown = repr(model) if model is None or isinstance(model, str | Path) else (
            f"a {type(model).__name__}")
        raise ModelNotLoadedError(
            f"capture takes a loaded InterpModel, got {shown}; load it first with "
            "interp.load(...) or bayesgeom.open_model(...)")
    m = model
    for name, v in (("batch_size", batch_size), ("prompts_per_shard", prompts_per_shard)):
        if v is not None and (isinstance(v, bool) or not isinstance(v, int) or v < 1):
            raise InterpError(f"{name} must be an integer of at least 1, got {v!r}")
    site_list = m.resolve_sites(sites)
    spec = normalise_positions(positions)
    check_prompt_count(prompts)
    tokens, texts = m.encode(prompts)
    lengths = [len(t) for t in tokens]
    check_positions(spec, lengths)
    sdt = STORE_DTYPES.get(store_dtype) if isinstance(store_dtype, str) else store_dtype
    if sdt is None:
        raise InterpError(f"unknown store dtype {store_dtype!r}; use {', '.join(STORE_DTYPES)}")
    torch.manual_seed(seed)

    n = len(tokens)
    per_shard = n if out is None else prompts_per_shard or auto_prompts_per_shard(
        m, site_list, spec, lengths, batch_size, torch.finfo(sdt).bits // 8)
    if part is not None and prompts_per_shard is None:
        per_shard = min(per_shard, -(-n // part[1]))
    n_shards = math.ceil(n / per_shard)
    shard_range = part_shards(part, n_shards, out)
    identity = {
        "model": m.info.name, "revision": m.info.revision, "model_dtype": m.info.dtype,
        "backend": m.info.backend, "sites": [s.name for s in site_list],
        "positions": spec if isinstance(spec, str) else list(spec),
        "prompts_sha256": prompts_sha256(tokens, texts), "n_prompts": n,
        "prompts_per_shard": per_shard, "store_dtype": str(sdt).removeprefix("torch."),
        **_entropy_over(entropy_slice(m), entropy),
        **({} if part is None else {"part": list(part)}),
    }
    prompt_table = pd.DataFrame({"prompt_index": range(n),
                                 "text": texts if texts is not None else [None] * n,
                                 "n_tokens": lengths})
    hold_out = contextlib.nullcontext() if out is None else hold(out)
    with hold_out:
        writer = None if out is None else ShardWriter(
            Path(out), identity, len(shard_range), prompt_table, restart,
            None if part is None else (shard_range.start, shard_range.stop))
        rows = _Rows(sdt, check_finite, pattern_width=max(lengths), entropy_ids=entropy_slice(m),
                     entropy=entropy)
        tensors, row_shapes = _run(m, tokens, lengths, site_list, spec, (per_shard, n_shards),
                                   rows, writer, progress, batch_size, shard_range)
        extra = {"sites": identity["sites"], "positions": identity["positions"],
                 "entropy_over": identity["entropy_over"],
                 "entropy_ids": identity["entropy_ids"], "model": m.info.to_dict(),
                 "n_layers": m.n_layers, "n_prompts": n, "prompts_sha256": identity[
                     "prompts_sha256"], "run": _manifest(m, seed, sdt)}
        if writer is not None:
            manifest = writer.finish(extra)
            return ActivationStore(manifest, path=Path(out))  # type: ignore[arg-type]
    manifest = {"format": "bayesgeom.activations/1", "complete": True, "identity": identity,
                "row_shapes": row_shapes, "shards": [], **extra}
    return ActivationStore(manifest, tensors=tensors, prompts=prompt_table)


def _run(m: InterpModel, tokens: list[list[int]], lengths: list[int], site_list: list[Site],
         spec: Any, shards: tuple[int, int], rows: _Rows, writer: ShardWriter | None,
         progress: bool, batch_size: int, which: range | None = None,
         ) -> tuple[dict[str, torch.Tensor], dict[str, list[int]]]:
    """Run every unfinished shard's batches with the reading hooks on (``shards``: prompts per
    shard, number of shards; ``which``: the shard indices to run, default all); returns the
    last shard's tensors and row shapes (all rows, in memory, when ``writer`` is None)."""
    per_shard, n_shards = shards
    which = range(n_shards) if which is None else which
    first, stop = which.start * per_shard, min(len(tokens), which.stop * per_shard)
    n = stop - first
    hooked = [s for s in site_list if s.kind != "logits"]
    want_logits = any(s.kind == "logits" for s in site_list)
    eager = any(s.kind == "attn.pattern" for s in site_list)
    keep = 1 if spec == "last" or not (rows.entropy or want_logits) else 0
    vocab = m.vocab_size or m.d_model
    max_tokens = None if keep else max(1, LOGITS_BUDGET_BYTES // (4 * vocab))
    tensors: dict[str, torch.Tensor] = {}
    row_shapes: dict[str, list[int]] = {}

    bar = tqdm(total=n, unit="prompt", desc="capture", disable=not progress)
    clock = FirstBatchClock(n)
    try:
        with m.hooks([(s, rows.reader(s)) for s in hooked]):
            for k in which:
                lo, hi = k * per_shard, min(len(tokens), (k + 1) * per_shard)
                if writer is not None and writer.done(k):
                    bar.update(hi - lo)
                    continue
                rows.start_shard(n_rows(spec, lengths[lo:hi]))
                for i, j in batch_bounds(lengths, lo, hi, batch_size, max_tokens):
                    b = m.batch(tokens[i:j], range(i, j))
                    rows.batch, rows.rows = b, _select_rows(spec, b.lengths, b.width)
                    logits = m.forward(b, logits_to_keep=keep, eager=eager)
                    _finish_batch(rows, logits, want_logits)
                    del logits  # not alive through the next forward
                    rows.offset += len(rows.rows)
                    bar.update(j - i)
                    clock.batch_done(j - i)  # the first batch times the rest
                assert rows.offset == rows.n_rows
                tensors = rows.buffers
                row_shapes = {s.name: list(tensors[s.name].shape[1:]) for s in site_list}
                if writer is not None:
                    writer.write(k, (lo, hi), tensors, row_shapes)
                    tensors = rows.buffers = {}  # let this shard's buffers go before the next
    finally:
        bar.close()
        rows.batch = rows.rows = None
        rows.buffers = {}
    return tensors, row_shapes


def _finish_batch(rows: _Rows, logits: torch.Tensor, want_logits: bool) -> None:
    """The logits rows (when requested), next-token entropy (bits, over ``rows.entropy_ids``)
    and the row index of one batch."""
    b, r = rows.batch, rows.rows
    assert b is not None and r is not None
    rows.put("prompt_index", b.prompt_index[r.batch], torch.int64)
    rows.put("position", r.position, torch.int64)
    rows.put("token_id", b.input_ids[r.batch, r.column], torch.int64)
    if not (rows.entropy or want_logits):
        rows.put("entropy_bits", torch.full((len(r.batch),), float("nan")), torch.float32,
                 check=False)
        return
    shift = b.width - logits.shape[1]
    at = (r.batch.to(logits.device), (r.column - shift).to(logits.device))
    if want_logits:
        rows.put("logits", logits[at])
    ent = _row_entropy(logits, at, rows.entropy_ids) if rows.entropy else torch.full(
        (len(r.batch),), float("nan"))
    if not want_logits and rows.check_finite and not bool(torch.isfinite(ent).all()):
        rows.raise_nonfinite("logits", logits[at].detach().float().cpu())
    rows.put("entropy_bits", ent, torch.float32, check=rows.entropy)


def _row_entropy(logits: torch.Tensor, at: tuple[torch.Tensor, torch.Tensor],
                 ids: slice | None) -> torch.Tensor:
    """Next-token entropy (bits, CPU) [R] of the rows ``logits[at]`` ([B, T, V] at R (batch,
    column) pairs), over ``ids``: a block of rows at a time, never all rows copied out at once."""
    step = max(1, CHUNK_ELEMENTS // logits.shape[-1])
    parts = [entropy_bits_from_logits(z if ids is None else z[..., ids]).cpu()
             for z in (logits[at[0][i:i + step], at[1][i:i + step]]
                       for i in range(0, len(at[0]), step))]
    return torch.cat(parts)


def _manifest(m: InterpModel, seed: int, sdt: torch.dtype) -> dict[str, Any]:
    return run_manifest(packages=_EXTRA_VERSIONS, seed=seed, model=m.info.to_dict(),
                        store_dtype=str(sdt))
