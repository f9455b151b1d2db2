"""The forward passes of a steering experiment: one clean pass, then edited passes that rerun
only the layers from the first edited one on (:mod:`interp.layer_resume`, checked against a
full pass on the first batch). Each edited pass gives up to three effects (:data:`EFFECTS`):

* ``total``: the edited model's logits;
* ``norm_frozen``: the same pass with the final norm's scale frozen at its clean value
  (:mod:`interp.norm_freeze`), removing only the norm's rescaling;
* ``direct_path``: downstream components held at their clean values (path patching): for one
  edited layer ℓ, logits = unembed(final_norm(h + Δ)) at the final token, h the clean final
  residual stream (``resid_post`` of the last layer) and Δ the edit's change of layer ℓ's
  output into the residual stream at the final token (:func:`path_site`: ``attn_out.ℓ`` for an
  attention site, since a value edit reaches later positions only through it). The model's own
  final norm and output embedding are applied (checked to reproduce the clean logits).
"""

from __future__ import annotations

import warnings
from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import torch

from ... import interp
from ...interp.interventions import Intervention
from ...interp.layer_resume import (
    RESUME_RTOL,
    LayerInput,
    forward_from_layer,
    forward_recording,
    resume_error,
)
from ...interp.norm_freeze import frozen_final_norm
from ...interp.sites import HEAD_KINDS
from ...interp.stacked_edits import repeat_batch, stackable, stacked_edits
from ...interp.unembed import frozen_head_logits, head_offset, unembed
from ...probes.energy_controls import EnergyMoments
from ...records.progress import tqdm
from ...windtunnel import PosteriorPrompts
from .prompt_rows import PromptRows, in_prompt_order, split_replicas

#: the effects an edited pass can give, in order
EFFECTS = ("total", "norm_frozen", "direct_path")

#: logits = unembed(final_norm(final residual)) to this relative error (checked on the clean
#: pass) lets the direct path run and the norm-frozen effect come from the total pass' final
#: residual instead of a second forward
HEAD_RTOL = 1e-4

#: edited passes stacked into one forward hold at most this many padded tokens (prompts × width
#: × replicas; a single replica always runs)
STACK_TOKENS = 1 << 15
#: ... and their logits at most this many numbers ([N, V] per pass and effect; 256 MB float32)
STACK_LOGITS = 1 << 26


def path_site(model: interp.InterpModel, site: str) -> str:
    """The site whose change carries an edit at ``site`` out of its layer into the residual
    stream: ``attn_out.ℓ`` for attention sites (q/k/v/z) and ``attn_out``, ``mlp_out.ℓ`` for
    ``mlp_out``, the site itself for ``resid_pre``/``resid_post``."""
    s = model.resolve_sites(site)[0]
    if s.kind in HEAD_KINDS or s.kind == "attn_out":
        return interp.site_name("attn_out", s.layer)
    return s.name


@dataclass
class Chunk:
    """One batch with what its edited passes reuse."""

    rows: np.ndarray
    cached: LayerInput
    scale: torch.Tensor | None = None
    final: torch.Tensor | None = None  # clean final residual at the last token [B, D]
    path: torch.Tensor | None = None  # clean path-site output at the last token [B, D]


@dataclass
class PassOutput:
    """One pass over every prompt: last-token ``logits`` [N, V] float32 and the final-token
    site activations per edited layer [N, F]."""

    logits: torch.Tensor
    acts: dict[int, np.ndarray] = field(default_factory=dict)


def _reader(store: list[torch.Tensor]) -> Any:
    def fn(x: torch.Tensor) -> None:
        store.append(x[:, -1].detach().float().flatten(1).cpu())  # left padding: last column
    return fn


def _energy_reader(m: interp.InterpModel, moments: dict[int, EnergyMoments], layer: int,
                   positions: str) -> Any:
    """Adds the rows an edit at ``positions`` ("all": every real token; "last": the final one)
    reaches to ``moments[layer]`` (site activations [B, T, ...] flattened per position)."""
    def fn(x: torch.Tensor) -> None:
        flat = x.detach().flatten(2)  # [B, T, F]
        if positions == "last":
            rows = flat[:, -1]
        else:
            batch = m.current_batch
            assert batch is not None
            rows = flat[batch.attention_mask.to(flat.device).bool()]
        rows64 = rows.to("cpu", torch.float64).numpy()
        moments.setdefault(layer, EnergyMoments.empty(rows64.shape[1])).add(rows64)
    return fn


class Runner:
    """Clean pass, then edited passes resumed from the first edited layer. ``sites``: the
    edited (and read) site per layer of ``layers``; ``direct_path`` needs a single layer."""

    def __init__(self, model: interp.InterpModel, pp: PosteriorPrompts, sites: list[str],
                 layers: list[int], *, batch_size: int, norm_frozen: bool, progress: bool,
                 direct_path: bool = False, positions: str = "all"):
        if direct_path and len(layers) != 1:
            raise ValueError("the direct-path effect is defined for one edited layer")
        self.m, self.pp, self.layers, self.sites = model, pp, layers, sites
        self.batch_size, self.norm_frozen, self.progress = batch_size, norm_frozen, progress
        self.direct_path = direct_path
        self.path = path_site(model, sites[0]) if direct_path else None
        self.final = interp.site_name("resid_post", model.n_layers - 1)
        self.start = min(layers)
        self.chunks: list[Chunk] = []
        self.resume_rel_error: float | None = None
        #: each prompt's final-token position [N] (set by the clean pass)
        self.last_positions = np.zeros(0, dtype=np.int64)
        #: max |unembed(final_norm(h_clean)) − clean logits| / max |clean logits| (direct path
        #: or norm-frozen effect; on the first batch)
        self.head_rel_error: float | None = None
        #: the clean pass' final residual and frozen scale give the norm-frozen logits through
        #: unembed (:data:`HEAD_RTOL`), instead of a second edited forward
        self.frozen_by_head = False
        #: ... and, where the head is linear in the norm's output (checked on the clean pass),
        #: by rescaling the total pass' own logits (:func:`interp.unembed.frozen_head_logits`),
        #: with no second head either; the logits of a norm output at its bias
        self.offset: torch.Tensor | None = None
        #: K edited passes per stacked forward, at most (None: :data:`STACK_TOKENS` decides)
        self.max_stack: int | None = None
        self.vocab_width = 1  # logits per row (set by the clean pass)
        self.resumed = True
        self.positions = positions
        #: per edited layer, the uncentred moments of the clean activations at every position
        #: the edits reach (set by the clean pass): what an edit removes or adds there
        self.moments: dict[int, EnergyMoments] = {}

    def _sites_hooks(self, stores: dict[int, list[torch.Tensor]]) -> list[tuple[str, Any]]:
        return [(s, _reader(stores[L])) for s, L in zip(self.sites, self.layers, strict=True)]

    def clean(self) -> PassOutput:
        tokens, _ = self.m.encode(self.pp.prompts)
        self.last_positions = np.array([len(t) - 1 for t in tokens])
        order = np.argsort([len(t) for t in tokens], kind="stable")  # less padding per batch
        stores: dict[int, list[torch.Tensor]] = {L: [] for L in self.layers}
        scales: list[torch.Tensor] = []
        logits = PromptRows(len(tokens))
        bar = tqdm(total=len(tokens), desc="clean pass", unit="prompt",
                   disable=not self.progress, leave=False)
        finals: list[torch.Tensor] = []
        paths: list[torch.Tensor] = []
        hooks = self._sites_hooks(stores)
        self.moments = {}
        hooks += [(site, _energy_reader(self.m, self.moments, L, self.positions))
                  for site, L in zip(self.sites, self.layers, strict=True)]
        if self.norm_frozen:
            hooks.append(("final_norm.scale", lambda s: scales.append(s.detach().float())))
        if self.path is not None or self.norm_frozen:
            hooks.append((self.final, _reader(finals)))
        if self.path is not None:
            hooks.append((self.path, _reader(paths)))
        for i in range(0, len(order), self.batch_size):
            rows = order[i:i + self.batch_size]
            batch = self.m.batch([tokens[j] for j in rows], rows.tolist())
            with self.m.hooks(hooks):
                z, cached = forward_recording(self.m, batch, self.start, logits_to_keep=1)
            logits.put(rows, z[:, -1].float())
            self.vocab_width = int(z.shape[-1])
            if finals and i == 0:
                ref = z[:, -1].float().cpu()
                self.head_rel_error = float((self.head(finals[-1]) - ref).abs().max()
                                            / ref.abs().max().clamp(min=1e-12))
                self.frozen_by_head = self.norm_frozen and self.head_rel_error <= HEAD_RTOL
                if self.frozen_by_head:
                    self.offset = self._checked_offset(finals[-1], scales[-1][:, -1])
            if i == 0:
                self.resume_rel_error = resume_error(self.m, cached, z)
                self.resumed = self.resume_rel_error <= RESUME_RTOL
                if not self.resumed:
                    warnings.warn(f"resuming at layer {self.start} changed the clean logits by "
                                  f"{self.resume_rel_error:.2g} (relative); running full passes",
                                  stacklevel=2)
            self.chunks.append(Chunk(rows, cached, scales[-1] if self.norm_frozen else None,
                                     finals[-1] if finals else None,
                                     paths[-1] if self.path else None))
            bar.update(len(rows))
        bar.close()
        return self._assemble(logits, stores)

    def _assemble(self, logits: PromptRows, stores: dict[int, list[torch.Tensor]],
                  ) -> PassOutput:
        """The pass's logits and its per-batch site activations, in prompt order."""
        rows = [c.rows for c in self.chunks]
        acts = {L: in_prompt_order(v, rows).numpy() for L, v in stores.items() if v}
        return PassOutput(logits.tensor(), acts)

    def _checked_offset(self, h: torch.Tensor, s: torch.Tensor) -> torch.Tensor | None:
        """:func:`interp.unembed.head_offset` if rescaling the clean logits of final residuals
        ``h`` [B, D] reproduces the frozen norm's at twice their scale ``s`` [B] (the norm's
        output halved about its bias) to :data:`HEAD_RTOL`, else None."""
        offset = head_offset(self.m)
        with frozen_final_norm(self.m, 2 * s[:, None]):
            want = self.head(h)
        got = frozen_head_logits(self.m, self.head(h), h, 2 * s, offset).cpu()
        err = float((got - want).abs().max() / want.abs().max().clamp(min=1e-12))
        return offset if err <= HEAD_RTOL else None

    def head(self, h: torch.Tensor) -> torch.Tensor:
        """unembed(final_norm(h)) with the model's own modules: ``h`` [B, D] final-token
        residual streams -> logits [B, V] (float32, CPU). Call outside hook contexts."""
        with torch.no_grad():
            return unembed(self.m, h).float().cpu()

    def edited(self, ivs: list[Intervention]) -> dict[str, PassOutput]:
        """Effect name (:data:`EFFECTS`, those enabled) -> its pass, for one set of edits; every
        pass carries the edited activations of the total pass."""
        stores: dict[int, list[torch.Tensor]] = {L: [] for L in self.layers}
        n = sum(len(c.rows) for c in self.chunks)
        out = {e: PromptRows(n) for e in EFFECTS}
        paths: list[torch.Tensor] = []
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", interp.NilInterventionWarning)
            with self.m.intervene(*ivs):
                for c in self.chunks:
                    hooks = self._sites_hooks(stores)
                    if self.path is not None:
                        hooks.append((self.path, _reader(paths)))
                    with self.m.hooks(hooks):
                        out["total"].put(c.rows, self._forward(c.cached)[:, -1].float())
                    if c.scale is not None:
                        with frozen_final_norm(self.m, c.scale):
                            out["norm_frozen"].put(c.rows, self._forward(c.cached)[:, -1].float())
        if self.path is not None:
            for c, p in zip(self.chunks, paths, strict=True):
                assert c.final is not None and c.path is not None
                out["direct_path"].put(c.rows, self.head(c.final + (p - c.path)))
        total = self._assemble(out["total"], stores)
        res = {"total": total}
        for e in EFFECTS[1:]:
            if out[e].buf is not None:
                res[e] = self._assemble(out[e], {})
                res[e].acts = total.acts
        return res

    def _forward(self, cached: LayerInput) -> torch.Tensor:
        if self.resumed:
            return forward_from_layer(self.m, cached, logits_to_keep=1)
        return self.m.forward(cached.batch, logits_to_keep=1)

    def stack_size(self, n: int) -> int:
        """How many of ``n`` edited passes run as replicas of one forward: at most
        :data:`STACK_TOKENS` padded tokens per forward and :data:`STACK_LOGITS` logits held
        per stack ([N, V] per pass and effect), at least 1."""
        widest = max(c.cached.batch.size * c.cached.batch.width for c in self.chunks)
        n_prompts = sum(len(c.rows) for c in self.chunks)
        per_pass = n_prompts * self.vocab_width * (1 + self.norm_frozen + self.direct_path)
        k = min(STACK_TOKENS // max(widest, 1), STACK_LOGITS // max(per_pass, 1))
        if self.max_stack is not None:
            k = min(k, self.max_stack)
        return max(1, min(n, k))

    def edited_many(self, edits: list[list[Intervention]]) -> Iterator[dict[str, PassOutput]]:
        """:meth:`edited` for each set of edits in ``edits``, in order; sets that differ only in
        their directions (:func:`interp.stacked_edits.stackable`, e.g. one condition along the
        axis and its controls) run :meth:`stack_size` at a time as replicas of one forward,
        with the norm-frozen logits from the total pass' final residual where
        :attr:`frozen_by_head` (its own logits rescaled where :attr:`offset` is set, else
        through the head). Equal to :meth:`edited` one set at a time to float rounding."""
        if not edits:
            return
        same = all(len(e) == len(edits[0]) for e in edits) and all(
            stackable([e[j] for e in edits]) for j in range(len(edits[0])))  # type: ignore[misc]
        if not same:
            for ivs in edits:
                yield self.edited(ivs)
            return
        k = self.stack_size(len(edits))
        for i in range(0, len(edits), k):
            yield from self._stack(edits[i:i + k])

    def _stack(self, replicas: list[list[Intervention]]) -> list[dict[str, PassOutput]]:
        k, n = len(replicas), sum(len(c.rows) for c in self.chunks)
        stores: dict[int, list[torch.Tensor]] = {L: [] for L in self.layers}
        out = {e: [PromptRows(n) for _ in range(k)] for e in EFFECTS}
        finals: list[torch.Tensor] = []
        paths: list[torch.Tensor] = []
        with stacked_edits(self.m, replicas):  # type: ignore[arg-type]
            for c in self.chunks:
                b = len(c.rows)
                cached = LayerInput(c.cached.layer, repeat_batch(c.cached.batch, k),
                                    c.cached.hidden.repeat(k, *([1] * (c.cached.hidden.ndim - 1))))
                hooks = self._sites_hooks(stores)
                if self.frozen_by_head or self.path is not None:
                    hooks.append((self.final, _reader(finals)))
                if self.path is not None:
                    hooks.append((self.path, _reader(paths)))
                with self.m.hooks(hooks):
                    z = self._forward(cached)[:, -1].float()
                split_replicas(out["total"], c.rows, z, b)
                if c.scale is not None and self.frozen_by_head and self.offset is not None:
                    split_replicas(out["norm_frozen"], c.rows, frozen_head_logits(
                        self.m, z, finals[-1], c.scale[:, -1].repeat(k), self.offset), b)
                elif c.scale is not None and self.frozen_by_head:
                    with frozen_final_norm(self.m, c.scale[:, -1:].repeat(k, 1)):
                        split_replicas(out["norm_frozen"], c.rows, self.head(finals[-1]), b)
                elif c.scale is not None:
                    with frozen_final_norm(self.m, c.scale.repeat(k, 1)):
                        split_replicas(out["norm_frozen"], c.rows,
                                       self._forward(cached)[:, -1].float(), b)
                if self.path is not None:
                    assert c.final is not None and c.path is not None
                    h = c.final.repeat(k, 1) + (paths[-1] - c.path.repeat(k, 1))
                    split_replicas(out["direct_path"], c.rows, self.head(h), b)
        rows = [c.rows for c in self.chunks]
        res = []
        for j in range(k):
            acts = {L: in_prompt_order([x[j * len(r):(j + 1) * len(r)] for x, r in
                                         zip(v, rows, strict=True)], rows).numpy()
                    for L, v in stores.items() if v}
            one = {"total": PassOutput(out["total"][j].tensor(), acts)}
            for e in EFFECTS[1:]:
                if out[e][j].buf is not None:
                    one[e] = PassOutput(out[e][j].tensor(), acts)
            res.append(one)
        return res
