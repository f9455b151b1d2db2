"""The Llama-style wind-tunnel transformer: Hugging Face's ``ArceeForCausalLM`` built from a preset.

Arcee is HF's Llama with a non-gated MLP, ``down_proj(act(up_proj(x)))``. Built with GELU,
``mlp_bias=True``, ``attention_bias=False``, RMSNorm (eps 1e-5), tied head and no dropout it
is the paper's production block (spec §1.5): pre-norm RMSNorm, separate bias-free
q/k/v/o projections, causal attention, ``Linear(d, d_ff) -> GELU -> Linear(d_ff, d)`` with
bias, final RMSNorm. Attention, norms and MLP are HF's own modules; this module only adds a
choice of positional scheme, ``config.position_scheme``:

* ``"learned"`` (arch ``llama``, the paper's model): a learned absolute table ``model.wpe``
  [P, d] added to the token embeddings (at ``position_ids``, so left-padded batches
  with positions from the mask, as ``interp`` builds them, equal the unpadded prompts); the
  rotary embedding is the identity (cos = 1, sin = 0), so attention itself is position-free.
* ``"rope"`` (arch ``llama-rope``): HF's stock rotary embedding (theta 10,000), no table.
* ``"nope"`` (arch ``llama-nope``): no positional signal at all except the causal mask (the
  identity rotary, no table).

Further schemes (ALiBi, BAM: issue 14) are meant to be added as more values of
``position_scheme``; they are not implemented.

P, the positions the config covers (``max_position_embeddings``, the table's rows), is
``task.max_seq_len + 1`` by default: the authors count the full sequence, whose last token is
only ever a target (bijection: 2L = 38 rows for the 37 input positions of V = 20, spec §1.2 and
§1.5), so the table is state-dict compatible with theirs and the count is theirs; its last row
is never read in training.

Shapes: ids [B, T] -> logits [B, T, V]; ``hidden_states`` follow HF (the embedding output,
token + position for ``"learned"``, then every layer's output, the last after the final norm);
``attentions`` are [B, H, T, T] per layer (eager attention is the default kernel, as the
GPT-2 wind-tunnel transformer trains with). Parameters, d = d_model, f = d_ff, L layers,
vocabulary V, P positions (``"learned"`` only), head tied to the token embedding::

    L * (4 d^2 + 2 d f + f + d + 2 d) + V d + [P d] + d

For the ``paper`` preset (6 x 6 x 192, f 768) on bijection V = 20 (V 40, P 38):
6 * 443,712 + 7,680 + 7,296 + 192 = 2,677,440, the spec's count; ``"rope"`` and ``"nope"``
have 38 * 192 = 7,296 fewer (2,670,144).

The config (``model_type`` ``bayesgeom_llama``) is registered with ``AutoConfig`` /
``AutoModelForCausalLM`` when this module is imported (``windtunnel.architectures`` imports it),
so ``save_pretrained`` / ``from_pretrained`` and ``interp.load(path)`` work once ``windtunnel``
has been imported in the process; ``interp``'s Llama family adapter serves it.
"""

from __future__ import annotations

from dataclasses import asdict
from typing import Any

import torch
from huggingface_hub.dataclasses import strict
from torch import nn
from transformers import ArceeConfig, ArceeForCausalLM, AutoConfig, AutoModelForCausalLM
from transformers.modeling_outputs import CausalLMOutputWithPast

from windtunnel.task import TaskConfigError, TokenTask
from windtunnel.transformer import TransformerPreset

#: positional schemes: a learned absolute table, rotary, or none (the causal mask alone)
POSITION_SCHEMES = ("learned", "rope", "nope")


@strict
class WindTunnelLlamaConfig(ArceeConfig):
    """``ArceeConfig`` plus ``position_scheme`` (one of :data:`POSITION_SCHEMES`)."""

    model_type = "bayesgeom_llama"
    position_scheme: str = "learned"

    def validate_position_scheme(self) -> None:
        if self.position_scheme not in POSITION_SCHEMES:
            raise ValueError(f"unknown position_scheme {self.position_scheme!r}; "
                             f"available: {', '.join(POSITION_SCHEMES)}")


class IdentityRotary(nn.Module):
    """A rotary embedding that rotates nothing: cos = 1, sin = 0, so HF's
    ``q * cos + rotate_half(q) * sin`` returns q (and k) exactly."""

    def __init__(self, head_dim: int):
        super().__init__()
        self.head_dim = head_dim

    def forward(self, x: torch.Tensor, position_ids: torch.Tensor,
                ) -> tuple[torch.Tensor, torch.Tensor]:
        shape = (*position_ids.shape, self.head_dim)
        return (torch.ones(shape, dtype=x.dtype, device=x.device),
                torch.zeros(shape, dtype=x.dtype, device=x.device))


class WindTunnelLlama(ArceeForCausalLM):
    """``ArceeForCausalLM`` with the positional scheme of its config; eager attention unless
    another kernel is asked for."""

    config_class = WindTunnelLlamaConfig

    def __init__(self, config: WindTunnelLlamaConfig):
        super().__init__(config)
        scheme = config.position_scheme
        if scheme == "learned":
            self.model.wpe = nn.Embedding(config.max_position_embeddings, config.hidden_size)
            nn.init.normal_(self.model.wpe.weight, std=config.initializer_range)
        if scheme in ("learned", "nope"):
            self.model.rotary_emb = IdentityRotary(config.head_dim)

    def get_correct_attn_implementation(self, requested_attention: str | None,
                                        is_init_check: bool = False) -> str:
        # eager by default (HF's default is sdpa): it returns patterns, and it is the kernel
        # the model trains with, so a reloaded model gives the same logits
        return super().get_correct_attn_implementation(requested_attention or "eager",
                                                       is_init_check)

    @property
    def wpe(self) -> nn.Embedding | None:
        """The learned position table (``model.wpe``; ``None`` unless ``"learned"``)."""
        wpe = getattr(self.model, "wpe", None)
        return wpe if isinstance(wpe, nn.Embedding) else None

    @property
    def norm(self) -> nn.Module:
        """The final norm (``model.norm``), where ``windtunnel.readout`` looks for it."""
        return self.model.norm

    def forward(  # type: ignore[override]
        self,
        input_ids: torch.LongTensor | None = None,
        attention_mask: torch.Tensor | None = None,
        position_ids: torch.LongTensor | None = None,
        past_key_values: Any = None,
        inputs_embeds: torch.Tensor | None = None,
        labels: torch.LongTensor | None = None,
        use_cache: bool | None = None,
        logits_to_keep: int | torch.Tensor = 0,
        **kwargs: Any,
    ) -> CausalLMOutputWithPast:
        wpe = self.wpe
        if wpe is not None:
            if inputs_embeds is None:
                if input_ids is None:
                    raise ValueError("give input_ids or inputs_embeds")
                inputs_embeds = self.model.embed_tokens(input_ids)
            T = inputs_embeds.shape[1]
            if position_ids is None:
                past = past_key_values.get_seq_length() if past_key_values is not None else 0
                position_ids = (torch.arange(T, device=inputs_embeds.device) + past)[None, :]
            n = wpe.num_embeddings
            if int(position_ids.max()) >= n:
                raise ValueError(f"position {int(position_ids.max())} exceeds the "
                                 f"{n} learned positions")
            inputs_embeds = inputs_embeds + wpe(position_ids)
            input_ids = None
        return super().forward(
            input_ids=input_ids, attention_mask=attention_mask, position_ids=position_ids,
            past_key_values=past_key_values, inputs_embeds=inputs_embeds, labels=labels,
            use_cache=use_cache, logits_to_keep=logits_to_keep, **kwargs)


def llama_config(task: TokenTask, preset: TransformerPreset, position_scheme: str = "learned",
                 n_positions: int | None = None) -> WindTunnelLlamaConfig:
    """The config for ``task`` at ``preset`` size; ``n_positions`` (default
    ``task.max_seq_len + 1``, the authors' count) sizes the position table."""
    if position_scheme not in POSITION_SCHEMES:
        raise TaskConfigError(f"unknown position scheme {position_scheme!r}; "
                              f"available: {', '.join(POSITION_SCHEMES)}")
    if preset.d_model % preset.n_head:
        raise TaskConfigError(
            f"d_model {preset.d_model} is not divisible by n_head {preset.n_head}")
    if n_positions is not None and n_positions < task.max_seq_len:
        raise TaskConfigError(f"{n_positions} positions cannot hold the task's "
                              f"{task.max_seq_len}")
    if position_scheme == "rope" and (preset.d_model // preset.n_head) % 2:
        raise TaskConfigError(f"RoPE needs an even head size, not "
                              f"{preset.d_model // preset.n_head}")
    return WindTunnelLlamaConfig(
        vocab_size=task.vocab_size,
        hidden_size=preset.d_model,
        intermediate_size=preset.d_ff,
        num_hidden_layers=preset.n_layer,
        num_attention_heads=preset.n_head,
        num_key_value_heads=preset.n_head,
        hidden_act="gelu",
        max_position_embeddings=task.max_seq_len + 1 if n_positions is None else n_positions,
        rms_norm_eps=1e-5,
        attention_bias=False,
        mlp_bias=True,
        attention_dropout=0.0,
        tie_word_embeddings=True,
        use_cache=False,
        pad_token_id=None,
        bos_token_id=None,
        eos_token_id=None,
        position_scheme=position_scheme,
        bayesgeom_preset=asdict(preset),
    )


def build_llama(task: TokenTask, preset: TransformerPreset, position_scheme: str = "learned",
                n_positions: int | None = None) -> WindTunnelLlama:
    """A freshly initialised Llama-style wind-tunnel transformer.

    Example:
        >>> from windtunnel import make_task
        >>> from windtunnel.transformer import get_preset
        >>> task = make_task("bijection", V=20)
        >>> m = build_llama(task, get_preset("paper"))
        >>> sum(p.numel() for p in m.parameters())
        2677440
        >>> tuple(m.model.wpe.weight.shape)  # 2L = 38 positions: the 37 inputs and one more
        (38, 192)
        >>> m(task.sample(2, 0).input_ids).logits.shape
        torch.Size([2, 37, 40])
    """
    model = WindTunnelLlama(llama_config(task, preset, position_scheme, n_positions))
    model.set_attn_implementation("eager")
    return model


def llama_params(vocab_size: int, n_positions: int, preset: TransformerPreset,
                 position_scheme: str = "learned") -> int:
    """Parameter count of :func:`build_llama` (tied head counted once) with ``n_positions``
    positions (``max_position_embeddings``)."""
    d, f = preset.d_model, preset.d_ff
    block = 4 * d * d + 2 * d * f + f + d + 2 * d
    table = n_positions * d if position_scheme == "learned" else 0
    return preset.n_layer * block + vocab_size * d + table + d


AutoConfig.register(WindTunnelLlamaConfig.model_type, WindTunnelLlamaConfig)
AutoModelForCausalLM.register(WindTunnelLlamaConfig, WindTunnelLlama)
