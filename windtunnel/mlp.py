"""Capacity-matched MLP baselines, as Hugging Face ``PreTrainedModel`` s (save/load like the rest).

* ``position``: per-position residual MLP — token + position embedding, then blocks
  ``x + W2·gelu(W1·LN(x))`` applied to every position independently, final LN, tied head. It
  cannot see the context (the authors' control): its best bijection score is the context-blind one.
* ``flat``: sees the whole zero-padded prefix. At query position t the embeddings of tokens
  0..t are placed in a [T, d_embd] grid (zeros after t), flattened, projected to ``width``, plus a
  learned embedding of t, then residual blocks of the same form, final LN and an untied head.
"""

from __future__ import annotations

from typing import ClassVar

import torch
import torch.nn.functional as F
from torch import nn
from transformers import PretrainedConfig, PreTrainedModel
from transformers.modeling_outputs import CausalLMOutput


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


class WindTunnelMLP(PreTrainedModel):
    """Logits [B, T, vocab] for ids [B, T]; ``hidden_states`` follow HF (last is post-norm)."""

    config_class = WindTunnelMLPConfig
    base_model_prefix = "mlp"
    _tied_weights_keys: ClassVar[dict[str, str]] = {"lm_head.weight": "embed.weight"}

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

    def _init_weights(self, module: nn.Module) -> None:
        if isinstance(module, nn.Linear | nn.Embedding):
            nn.init.normal_(module.weight, std=0.02)
            if getattr(module, "bias", None) is not None:
                nn.init.zeros_(module.bias)
        elif isinstance(module, nn.LayerNorm):
            nn.init.ones_(module.weight)
            nn.init.zeros_(module.bias)

    def get_input_embeddings(self) -> nn.Embedding:
        return self.embed

    def get_output_embeddings(self) -> nn.Linear:
        return self.lm_head

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
