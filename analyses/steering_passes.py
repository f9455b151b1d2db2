"""The forward passes of a steering experiment: one clean pass, then edited passes that rerun
only the layers from the first edited one on (:mod:`interp.layer_resume`, checked against a
full pass on the first batch), each scored with and without the final norm's scale frozen.
"""

from __future__ import annotations

import warnings
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import torch
from tqdm.auto import tqdm

import interp
from interp.interventions import Intervention
from interp.layer_resume import LayerInput, forward_from_layer, forward_recording, resume_error
from interp.norm_freeze import frozen_final_norm
from windtunnel import PosteriorPrompts

#: resumed clean logits must match the full pass to this relative error, else full passes run
RESUME_RTOL = 1e-4


@dataclass
class Chunk:
    """One batch with what its edited passes reuse."""

    rows: np.ndarray
    cached: LayerInput
    scale: torch.Tensor | None


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


class Runner:
    """Clean pass, then edited passes resumed from the first edited layer. ``sites``: the
    edited (and read) site per layer of ``layers``."""

    def __init__(self, model: interp.InterpModel, pp: PosteriorPrompts, sites: list[str],
                 layers: list[int], *, batch_size: int, direct: bool, progress: bool):
        self.m, self.pp, self.layers, self.sites = model, pp, layers, sites
        self.batch_size, self.direct, self.progress = batch_size, direct, progress
        self.start = min(layers)
        self.chunks: list[Chunk] = []
        self.resume_rel_error: float | None = None
        self.resumed = True

    def _sites_hooks(self, stores: dict[int, list[torch.Tensor]]) -> list[tuple[str, Any]]:
        return [(s, _reader(stores[L])) for s, L in zip(self.sites, self.layers, strict=True)]

    def clean(self) -> PassOutput:
        tokens, _ = self.m.encode(self.pp.prompts)
        order = np.argsort([len(t) for t in tokens], kind="stable")  # less padding per batch
        stores: dict[int, list[torch.Tensor]] = {L: [] for L in self.layers}
        scales: list[torch.Tensor] = []
        logits: list[torch.Tensor] = []
        bar = tqdm(total=len(tokens), desc="clean pass", unit="prompt",
                   disable=not self.progress, leave=False)
        hooks = self._sites_hooks(stores)
        if self.direct:
            hooks.append(("final_norm.scale", lambda s: scales.append(s.detach().float())))
        for i in range(0, len(order), self.batch_size):
            rows = order[i:i + self.batch_size]
            batch = self.m.batch([tokens[j] for j in rows], rows.tolist())
            with self.m.hooks(hooks):
                z, cached = forward_recording(self.m, batch, self.start, logits_to_keep=1)
            logits.append(z[:, -1].float())
            if i == 0:
                self.resume_rel_error = resume_error(self.m, cached, z)
                self.resumed = self.resume_rel_error <= RESUME_RTOL
                if not self.resumed:
                    warnings.warn(f"resuming at layer {self.start} changed the clean logits by "
                                  f"{self.resume_rel_error:.2g} (relative); running full passes",
                                  stacklevel=2)
            self.chunks.append(Chunk(rows, cached, scales[-1] if self.direct else None))
            bar.update(len(rows))
        bar.close()
        return self._assemble(logits, stores)

    def _assemble(self, logits: list[torch.Tensor], stores: dict[int, list[torch.Tensor]],
                  ) -> PassOutput:
        rows = np.concatenate([c.rows for c in self.chunks])
        inv = np.empty_like(rows)
        inv[rows] = np.arange(rows.size)
        z = torch.cat(logits)[torch.as_tensor(inv)]
        acts = {L: torch.cat(v)[torch.as_tensor(inv)].numpy() for L, v in stores.items() if v}
        return PassOutput(z, acts)

    def edited(self, ivs: list[Intervention]) -> tuple[PassOutput, PassOutput | None]:
        """(total, norm-frozen or None) for one set of edits."""
        stores: dict[int, list[torch.Tensor]] = {L: [] for L in self.layers}
        total: list[torch.Tensor] = []
        direct: list[torch.Tensor] = []
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", interp.NilInterventionWarning)
            with self.m.intervene(*ivs):
                for c in self.chunks:
                    with self.m.hooks(self._sites_hooks(stores)):
                        total.append(self._run(c)[:, -1].float())
                    if c.scale is not None:
                        with frozen_final_norm(self.m, c.scale):
                            direct.append(self._run(c)[:, -1].float())
        t = self._assemble(total, stores)
        d = self._assemble(direct, {}) if direct else None
        return t, d

    def _run(self, c: Chunk) -> torch.Tensor:
        if self.resumed:
            return forward_from_layer(self.m, c.cached, logits_to_keep=1)
        return self.m.forward(c.cached.batch, logits_to_keep=1)
