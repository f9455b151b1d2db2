"""Capacity-matched MLP baselines, as Hugging Face ``PreTrainedModel`` s (save/load like the rest).

* ``position``: per-position residual MLP — token + position embedding, then blocks
  ``x + W2·gelu(W1·LN(x))`` applied to every position independently, final LN, tied head. It
  cannot see the context (the authors' control): its best bijection score is the context-blind one.
* ``flat``: sees the whole zero-padded prefix. At query position t the embeddings of tokens
  0..t are placed in a [T, d_embd] grid (zeros after t), flattened, projected to ``width``, plus a
  learned embedding of t, then residual blocks of the same form, final LN and an untied head.

Archs ``mlp-position`` and ``mlp-flat`` (:data:`MLP_POSITION`, :data:`MLP_FLAT`): sized by
:func:`mlp_config` so their parameter count matches the transformer preset's for the same task
to well within ±2 %, with round(1.5 × the preset's depth) blocks. Their config
(``model_type`` ``bayesgeom_mlp``) is registered with ``AutoConfig`` /
``AutoModelForCausalLM`` by :func:`windtunnel.architectures.register_auto_classes`.
"""

from __future__ import annotations

import torch
import torch.nn.functional as F
from torch import nn
from transformers import PretrainedConfig
from transformers.modeling_outputs import CausalLMOutput

from .arch_spec import ArchSpec, SavedModelSpec
from .task import TaskConfigError, TokenTask
from .tied_lm import TiedEmbeddingLM
from .transformer import get_preset, transformer_params


class WindTunnelMLPConfig(PretrainedConfig):
    model_type = "bayesgeom_mlp"

    def __init__(
        self,
        kind: str = "position",
        vocab_size: int = 40,
        n_positions: int = 38,
        d_embd: int = 64,
        width: int = 64,
        d_inner: int = 256,
        n_blocks: int = 2,
        **kwargs,
    ):
        self.kind = kind
        self.vocab_size = vocab_size
        self.n_positions = n_positions
        self.d_embd = d_embd
        self.width = width
        self.d_inner = d_inner
        self.n_blocks = n_blocks
        kwargs.setdefault("tie_word_embeddings", kind == "position")
        super().__init__(**kwargs)


class _Block(nn.Module):
    def __init__(self, width: int, d_inner: int):
        super().__init__()
        self.ln = nn.LayerNorm(width)
        self.fc1 = nn.Linear(width, d_inner)
        self.fc2 = nn.Linear(d_inner, width)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return x + self.fc2(F.gelu(self.fc1(self.ln(x))))


class WindTunnelMLP(TiedEmbeddingLM):
    """Logits [B, T, vocab] for ids [B, T]; ``hidden_states`` follow HF (last is post-norm)."""

    config_class = WindTunnelMLPConfig
    base_model_prefix = "mlp"

    def __init__(self, config: WindTunnelMLPConfig):
        super().__init__(config)
        c = config
        if c.kind not in ("position", "flat"):
            raise ValueError(f"unknown MLP kind {c.kind!r}; use 'position' or 'flat'")
        self.embed = nn.Embedding(c.vocab_size, c.d_embd)
        if c.kind == "position":
            self.pos = nn.Embedding(c.n_positions, c.d_embd)
        else:
            self.in_proj = nn.Linear(c.n_positions * c.d_embd, c.width)
            self.pos = nn.Embedding(c.n_positions, c.width)
        self.blocks = nn.ModuleList(_Block(c.width, c.d_inner) for _ in range(c.n_blocks))
        self.norm = nn.LayerNorm(c.width)
        self.lm_head = nn.Linear(c.width, c.vocab_size, bias=False)
        self.post_init()

    def forward(
        self,
        input_ids: torch.Tensor,
        output_hidden_states: bool = False,
        return_dict: bool = True,
        **_: object,
    ) -> CausalLMOutput:
        B, T = input_ids.shape
        c = self.config
        if c.n_positions < T:
            raise ValueError(f"sequence length {T} exceeds n_positions={c.n_positions}")
        pos = torch.arange(T, device=input_ids.device)
        e = self.embed(input_ids)
        if c.kind == "position":
            x = e + self.pos(pos)
        else:
            # grid[b, t, j] = e[b, j] if j <= t else 0, padded to n_positions, then flattened.
            causal = torch.tril(torch.ones(T, T, device=e.device, dtype=e.dtype))
            grid = causal[None, :, :, None] * e[:, None, :, :]
            grid = F.pad(grid, (0, 0, 0, c.n_positions - T))
            x = self.in_proj(grid.reshape(B, T, -1)) + self.pos(pos)
        hidden = [x]
        for blk in self.blocks:
            x = blk(x)
            hidden.append(x)
        x = self.norm(x)
        if output_hidden_states:
            hidden[-1] = x
        return CausalLMOutput(
            logits=self.lm_head(x), hidden_states=tuple(hidden) if output_hidden_states else None
        )


def _block_params(width: int, d_inner: int) -> int:
    return 2 * width + width * d_inner + d_inner + d_inner * width + width


def mlp_params(c: WindTunnelMLPConfig) -> int:
    """Parameter count of ``WindTunnelMLP(c)`` (the ``position`` kind's tied head once)."""
    V, P, e, w = c.vocab_size, c.n_positions, c.d_embd, c.width
    blocks = c.n_blocks * _block_params(w, c.d_inner) + 2 * w  # blocks, final norm
    if c.kind == "position":
        return V * e + P * e + blocks
    return V * e + P * e * w + w + P * w + blocks + w * V  # in_proj, position, untied head


def _solve_inner(target: int, fixed: int, width: int, n_blocks: int) -> int:
    """MLP width inside each block that brings the total closest to ``target``."""
    per_unit = n_blocks * (2 * width + 1)
    inner = round((target - fixed - n_blocks * 3 * width) / per_unit)
    if inner < 1:
        raise TaskConfigError(f"cannot match {target:,} parameters with an MLP of width {width}")
    return inner


def mlp_config(task: TokenTask, kind: str, preset: str) -> WindTunnelMLPConfig:
    """The MLP of ``kind`` (``position``: the preset's width; ``flat``: embeddings of a quarter
    of it, the width searched) whose count is closest to the ``preset`` transformer's."""
    p = get_preset(preset)
    target = transformer_params(task, preset)
    V, P = task.vocab_size, task.max_seq_len
    n_blocks = max(1, round(1.5 * p.n_layer))
    if kind == "position":
        w = p.d_model
        fixed = V * w + P * w + 2 * w  # token + position embeddings, final norm (head tied)
        inner = _solve_inner(target, fixed, w, n_blocks)
        return WindTunnelMLPConfig("position", V, P, w, w, inner, n_blocks)
    e = max(8, p.d_model // 4)

    def fixed_flat(w: int) -> int:
        return V * e + P * e * w + w + P * w + 2 * w + w * V

    best = min(
        range(8, 4 * p.d_model + 1),
        key=lambda w: abs(fixed_flat(w) + n_blocks * _block_params(w, 2 * w) - target),
    )
    inner = _solve_inner(target, fixed_flat(best), best, n_blocks)
    return WindTunnelMLPConfig("flat", V, P, e, best, inner, n_blocks)


def mlp_sizes(task: TokenTask, kind: str, preset: str) -> dict[str, int]:
    """Blocks (``n_layer``), width (``d_model``), embedding and inner widths, parameter count
    and the transformer's, of the matched MLP of ``kind``."""
    c = mlp_config(task, kind, preset)
    return {"n_layer": c.n_blocks, "d_model": c.width, "d_embd": c.d_embd,
            "d_inner": c.d_inner, "params": mlp_params(c),
            "transformer_params": transformer_params(task, preset)}


MLP_SAVED = SavedModelSpec("bayesgeom_mlp", final_norm="norm",
                           classes=(WindTunnelMLPConfig, WindTunnelMLP))


def _mlp_arch(kind: str) -> ArchSpec:
    return ArchSpec(
        f"mlp-{kind}", MLP_SAVED,
        build=lambda task, preset: WindTunnelMLP(mlp_config(task, kind, preset)),
        sizes=lambda task, preset: mlp_sizes(task, kind, preset), activation_bytes=None)


MLP_POSITION, MLP_FLAT = _mlp_arch("position"), _mlp_arch("flat")
