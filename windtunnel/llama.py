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

* ``"alibi"`` (arch ``llama-alibi``): ALiBi's fixed bias −m_h (i − j) on the scores, slopes
  m_h = 2^(−8h/H) (:mod:`windtunnel.position_priors`), the identity rotary, no table.
* ``"bam"`` (arch ``llama-bam``): BAM's learned generalised-Gaussian prior
  −exp(θα_h) (|i − j − μ_h| + ε)^θβ_h on the scores, θα = θβ = 0 at initialisation (so it starts
  as NoPE, bit for bit at the same seed), one prior per layer (``bam_shared``: one for all;
  ``bam_learn_mu``: a learned location), the identity rotary, no table.

``ssmax`` (arch ``llama-bam-ssmax`` for BAM; any scheme) multiplies the scores and bias by a
learned per-head σ_h × log(number of visible keys). The priors and SSMax live in
:class:`windtunnel.position_priors.PriorAttention`, which replaces HF's attention module only
where they are used (so ``learned``/``rope``/``nope`` models are HF's stock modules).

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

plus, with H heads, 2 H per layer for BAM's θα, θβ (2 H in all with ``bam_shared``; 3 H with
``bam_learn_mu``) and H per layer for SSMax's σ; ALiBi adds none. For the ``paper`` preset
(6 x 6 x 192, f 768) on bijection V = 20 (V 40, P 38): 6 * 443,712 + 7,680 + 7,296 + 192 =
2,677,440, the spec's count; ``"rope"``, ``"nope"`` and ``"alibi"`` have 38 * 192 = 7,296
fewer (2,670,144), ``"bam"`` 72 more than those (2,670,216), ``"bam"`` with SSMax 108 more
(2,670,252).

The config (``model_type`` ``bayesgeom_llama``) is registered with ``AutoConfig`` /
``AutoModelForCausalLM`` by :func:`windtunnel.architectures.register_auto_classes` (run by
``import bayesgeom.windtunnel`` and before every checkpoint load), so ``save_pretrained`` /
``from_pretrained`` and ``interp.load(path)`` work once ``windtunnel`` has been imported in the
process; ``interp``'s Llama family adapter serves it.
"""

from __future__ import annotations

from dataclasses import asdict
from typing import Any

import torch
from huggingface_hub.dataclasses import strict
from torch import nn
from transformers import ArceeConfig, ArceeForCausalLM
from transformers import initialization as init
from transformers.modeling_outputs import CausalLMOutputWithPast

from .arch_spec import ArchSpec, SavedModelSpec
from .position_priors import PRIOR_SCHEMES, PositionPrior, PriorAttention
from .task import TaskConfigError, TokenTask
from .transformer import (
    ATTENTION_WHAT,
    TransformerPreset,
    attention_activation_bytes,
    get_preset,
    preset_sizes,
)

#: positional schemes: a learned absolute table, rotary, none (the causal mask alone), or an
#: additive prior on the scores (ALiBi, BAM)
POSITION_SCHEMES = ("learned", "rope", "nope", *PRIOR_SCHEMES)


@strict
class WindTunnelLlamaConfig(ArceeConfig):
    """``ArceeConfig`` plus ``position_scheme`` (one of :data:`POSITION_SCHEMES`), BAM's
    ``bam_shared`` (one prior for all layers) and ``bam_learn_mu`` (a learned location), and
    ``ssmax`` (SSMax scaling of the scores, any scheme)."""

    model_type = "bayesgeom_llama"
    position_scheme: str = "learned"
    bam_shared: bool = False
    bam_learn_mu: bool = False
    ssmax: bool = False

    def validate_position_scheme(self) -> None:
        if self.position_scheme not in POSITION_SCHEMES:
            raise ValueError(f"unknown position_scheme {self.position_scheme!r}; "
                             f"available: {', '.join(POSITION_SCHEMES)}")
        if (self.bam_shared or self.bam_learn_mu) and self.position_scheme != "bam":
            raise ValueError(f"bam_shared and bam_learn_mu are BAM options, not for "
                             f"position_scheme {self.position_scheme!r}")


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
        if scheme != "rope":
            self.model.rotary_emb = IdentityRotary(config.head_dim)
        if scheme in PRIOR_SCHEMES or config.ssmax:
            self._install_priors(config)

    def _install_priors(self, config: WindTunnelLlamaConfig) -> None:
        """Swap each layer's attention for a :class:`PriorAttention` (same projections)."""
        H, bam = config.num_attention_heads, config.position_scheme == "bam"
        shared = PositionPrior(H, config.bam_learn_mu) if bam and config.bam_shared else None
        if shared is not None:
            self.model.position_prior = shared
        for layer in self.model.layers:
            own = PositionPrior(H, config.bam_learn_mu) if bam and shared is None else None
            attn = PriorAttention(layer.self_attn, config.position_scheme, own, config.ssmax)
            if shared is not None:
                attn.share_prior(shared)
            layer.self_attn = attn

    def _init_weights(self, module: nn.Module) -> None:
        super()._init_weights(module)
        if isinstance(module, PositionPrior):
            for t in (module.theta_alpha, module.theta_beta, module.theta_mu):
                init.zeros_(t)
        if isinstance(module, PriorAttention) and module.ssmax_scale is not None:
            init.ones_(module.ssmax_scale)

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
                 n_positions: int | None = None, *, ssmax: bool = False,
                 bam_shared: bool = False, bam_learn_mu: bool = False,
                 ) -> WindTunnelLlamaConfig:
    """The config for ``task`` at ``preset`` size; ``n_positions`` (default
    ``task.max_seq_len + 1``, the authors' count) sizes the position table; ``ssmax``,
    ``bam_shared``, ``bam_learn_mu`` as in :class:`WindTunnelLlamaConfig`."""
    if position_scheme not in POSITION_SCHEMES:
        raise TaskConfigError(f"unknown position scheme {position_scheme!r}; "
                              f"available: {', '.join(POSITION_SCHEMES)}")
    if (bam_shared or bam_learn_mu) and position_scheme != "bam":
        raise TaskConfigError(f"bam_shared and bam_learn_mu are BAM options; position scheme "
                              f"{position_scheme!r} has no BAM prior")
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
        bam_shared=bam_shared,
        bam_learn_mu=bam_learn_mu,
        ssmax=ssmax,
        bayesgeom_preset=asdict(preset),
    )


def build_llama(task: TokenTask, preset: TransformerPreset, position_scheme: str = "learned",
                n_positions: int | None = None, **options: bool) -> WindTunnelLlama:
    """A freshly initialised Llama-style wind-tunnel transformer; ``options`` are
    :func:`llama_config`'s ``ssmax``, ``bam_shared``, ``bam_learn_mu``.

    Example:
        >>> from bayesgeom.windtunnel import make_task
        >>> from bayesgeom.windtunnel.transformer import get_preset
        >>> task = make_task("bijection", V=20)
        >>> m = build_llama(task, get_preset("paper"))
        >>> sum(p.numel() for p in m.parameters())
        2677440
        >>> tuple(m.model.wpe.weight.shape)  # 2L = 38 positions: the 37 inputs and one more
        (38, 192)
        >>> m(task.sample(2, 0).input_ids).logits.shape
        torch.Size([2, 37, 40])
    """
    model = WindTunnelLlama(llama_config(task, preset, position_scheme, n_positions, **options))
    model.set_attn_implementation("eager")
    return model


def llama_params(vocab_size: int, n_positions: int, preset: TransformerPreset,
                 position_scheme: str = "learned", *, ssmax: bool = False,
                 bam_shared: bool = False, bam_learn_mu: bool = False) -> int:
    """Parameter count of :func:`build_llama` (tied head counted once) with ``n_positions``
    positions (``max_position_embeddings``).

    Example:
        >>> from bayesgeom.windtunnel.transformer import get_preset
        >>> llama_params(40, 38, get_preset("paper"), "bam", ssmax=True)  # 2,670,144 + 6·18
        2670252
    """
    d, f, H, L = preset.d_model, preset.d_ff, preset.n_head, preset.n_layer
    block = 4 * d * d + 2 * d * f + f + d + 2 * d + (H if ssmax else 0)
    table = n_positions * d if position_scheme == "learned" else 0
    per_prior = (3 if bam_learn_mu else 2) * H if position_scheme == "bam" else 0
    priors = per_prior * (1 if bam_shared else L)
    return L * block + vocab_size * d + table + d + priors


def _table_rows(config: WindTunnelLlamaConfig) -> int | None:
    """The learned table's rows (``learned``); None for the schemes without one."""
    return int(config.max_position_embeddings) if config.position_scheme == "learned" else None


LLAMA_SAVED = SavedModelSpec("bayesgeom_llama", final_norm="norm",
                             classes=(WindTunnelLlamaConfig, WindTunnelLlama),
                             position_limit=_table_rows)


def _llama_arch(name: str, scheme: str, **options: bool) -> ArchSpec:
    """The arch ``name``: the Llama-style transformer at the preset's sizes with ``scheme``."""
    return ArchSpec(
        name, LLAMA_SAVED,
        build=lambda task, preset: build_llama(task, get_preset(preset), scheme, **options),
        sizes=lambda task, preset: preset_sizes(preset, llama_params(
            task.vocab_size, task.max_seq_len + 1, get_preset(preset), scheme, **options)),
        activation_bytes=attention_activation_bytes, activation_what=ATTENTION_WHAT,
        attention=True)


#: learned absolute positions (the paper's production model), RoPE, none; the additive priors
#: on the scores (windtunnel.position_priors): ALiBi's fixed slopes, BAM's learned per-layer
#: prior (starts as NoPE), BAM with SSMax
LLAMA = _llama_arch("llama", "learned")
LLAMA_ROPE = _llama_arch("llama-rope", "rope")
LLAMA_NOPE = _llama_arch("llama-nope", "nope")
LLAMA_ALIBI = _llama_arch("llama-alibi", "alibi")
LLAMA_BAM = _llama_arch("llama-bam", "bam")
LLAMA_BAM_SSMAX = _llama_arch("llama-bam-ssmax", "bam", ssmax=True)
