"""Mamba-2 (arch ``mamba2``): Hugging Face's ``Mamba2ForCausalLM`` with a CPU-fast SSD mixer.

The model is HF's stock Mamba-2 (``Mamba2Config``, ``model_type`` ``mamba2``): embeddings,
RMSNorm pre-norm blocks whose one sublayer is the Mamba-2 mixer (in_proj -> causal depthwise
conv of kernel 4 + SiLU -> the SSD scan with a *scalar* decay per head -> gated RMSNorm ->
out_proj), final RMSNorm, tied head. Its saved directory is HF's format and loads with plain
transformers (HF's chunked SSD path) and ``interp.load(path)`` without bayesgeom.

What bayesgeom changes is how the mixer's forward is computed when no cache is passed
(training, evaluation, capture): :class:`SSDMixer` (a ``Mamba2Mixer`` subclass with the same
parameters, installed by :func:`use_ssd`) evaluates the SSD in its quadratic ("attention-like")
form over the whole sequence, as one masked matrix product per head::

    y_t = sum_{s <= t} (C_t . B_s) exp(S_t - S_s) dt_s x_s + D x_t,   S_t = sum_{r <= t} dt_r A

with ``exp(S_t - S_s)`` from a masked cumulative sum (HF's stable ``segment_sum``). It is HF's
``torch_forward`` with a single chunk, minus its per-head repeat of B and C (one group shares
C Bᵀ), the chunk padding and the layout copies; the outputs agree with HF's to float32
rounding (``tests/windtunnel/test_mamba2.py``). Memory is attention's: [B, H, T, T] per layer
(:func:`ssd_bytes`). A cache (generation) falls back to HF's own forward.

Shapes (d = ``hidden_size``, di = 2d, H heads of P = di / H, N = 16 state, G = 1 group):
ids [B, T] -> logits [B, T, V]; ``hidden_states`` follow HF's Mamba (every block's output,
then the last one again after the final norm). Parameters per block::

    d (norm) + d (2 di + 2 G N + H) (in_proj) + (di + 2 G N)(k + 1) (conv with bias)
    + 3 H (dt_bias, A_log, D) + di (gated norm) + di d (out_proj)

plus V d (embedding, tied head) and d (final norm): :func:`mamba2_params`.

Paper I's Mamba is a Mamba-1 selective SSM (a per-channel, per-state decay: arch ``mamba``);
Mamba-2's decay is one scalar per head, which is what makes the scan a matrix product.

The arch (:data:`MAMBA2`) keeps the transformer preset's depth and is matched to its parameter
count by ``d_model``, its SSD head count the one whose head size is nearest Mamba-2's 64
(:func:`mamba2_heads`, :func:`mamba2_sizes`); a saved one reopens with the SSD mixer.
"""

from __future__ import annotations

import math
from typing import Any

import torch
import torch.nn.functional as F
from transformers import Mamba2Config, Mamba2ForCausalLM
from transformers.models.mamba2.modeling_mamba2 import Mamba2Mixer

from .arch_spec import ArchSpec, SavedModelSpec, widths_to
from .task import TokenTask
from .transformer import get_preset, transformer_params

#: the sizes that stay fixed when a preset is matched (as Mamba-1's: d_state 16, expand 2,
#: conv kernel 4; one group of B and C, Mamba-2's default)
MAMBA2_STATE, MAMBA2_EXPAND, MAMBA2_CONV, MAMBA2_GROUPS = 16, 2, 4, 1


def mamba2_config(vocab_size: int, d_model: int, n_layer: int, n_heads: int,
                  **extra: Any) -> Mamba2Config:
    """A ``Mamba2Config`` of width ``d_model``, ``n_layer`` blocks and ``n_heads`` SSD heads
    (head_dim = 2 d_model / n_heads, which must be whole) for a wind-tunnel vocabulary: d_state
    16, expand 2, conv kernel 4, one group, tied head, no cache, no special tokens. HF's chunk
    size (used only where HF's own forward runs: a loaded model outside bayesgeom) is 64
    unless ``extra`` says otherwise."""
    inner = MAMBA2_EXPAND * d_model
    extra.setdefault("chunk_size", 64)
    if inner % n_heads:
        raise ValueError(f"mamba2: 2 * d_model = {inner} is not divisible by {n_heads} heads")
    return Mamba2Config(
        vocab_size=vocab_size,
        hidden_size=d_model,
        num_hidden_layers=n_layer,
        num_heads=n_heads,
        head_dim=inner // n_heads,
        state_size=MAMBA2_STATE,
        expand=MAMBA2_EXPAND,
        conv_kernel=MAMBA2_CONV,
        n_groups=MAMBA2_GROUPS,
        use_cache=False,
        tie_word_embeddings=True,
        pad_token_id=None,
        bos_token_id=None,
        eos_token_id=None,
        **extra,
    )


def mamba2_params(vocab_size: int, d_model: int, n_layer: int, n_heads: int) -> int:
    """Parameter count of ``Mamba2ForCausalLM(mamba2_config(...))`` (tied head counted once)."""
    d, N, G, k = d_model, MAMBA2_STATE, MAMBA2_GROUPS, MAMBA2_CONV
    inner = MAMBA2_EXPAND * d
    conv_dim = inner + 2 * G * N
    block = (d  # pre-norm
             + d * (2 * inner + 2 * G * N + n_heads)  # in_proj -> (z, x, B, C, dt)
             + conv_dim * (k + 1)  # depthwise conv with bias
             + 3 * n_heads  # dt_bias, A_log, D
             + inner  # gated RMSNorm
             + inner * d)  # out_proj
    return vocab_size * d + n_layer * block + d


def ssd_bytes(n: int, n_heads: int, seq_len: int, n_layer: int) -> int:
    """Estimated memory of the quadratic SSD for an ``n``-sequence batch: float32
    [n, H, T, T] five times per layer (the segment sums, their exponential, the masked
    products and two gradients), for ``n_layer`` layers."""
    return 5 * 4 * n * n_heads * seq_len * seq_len * n_layer


def segment_sum(a: torch.Tensor) -> torch.Tensor:
    """[..., T] -> [..., T, T]: entry (t, s) is a_{s+1} + ... + a_t for s <= t (0 on the
    diagonal) and -inf above it, by a masked cumulative sum (no difference of large prefix
    sums, so exp of it is exact to rounding even where the prefix sums are large)."""
    T = a.shape[-1]
    x = a[..., :, None].expand(*a.shape, T)  # x[..., r, s] = a_r
    below = torch.ones(T, T, dtype=torch.bool, device=a.device).tril()
    seg = torch.cumsum(x.masked_fill(~below.tril(-1), 0.0), dim=-2)
    return seg.masked_fill(~below, float("-inf"))


def causal_depthwise_conv(x: torch.Tensor, weight: torch.Tensor, bias: torch.Tensor | None,
                          ) -> torch.Tensor:
    """HF's causal depthwise conv on channels-last input: x [B, T, C], weight [C, 1, k], bias
    [C] -> [B, T, C], out_t = bias + sum_j weight[:, 0, j] x_{t - k + 1 + j} (zeros before the
    start). ``F.conv1d`` on the transposed view: measured faster, backward included, than k
    shifted multiply-adds or an unfold on 2 CPU threads."""
    k, T = weight.shape[-1], x.shape[1]
    return F.conv1d(x.transpose(1, 2), weight, bias, padding=k - 1,
                    groups=x.shape[2])[..., :T].transpose(1, 2)


class SSDMixer(Mamba2Mixer):
    """HF's ``Mamba2Mixer`` (same parameters and initialisation) whose forward without a cache
    is the quadratic SSD (module doc): hidden_states [B, T, d] -> [B, T, d]."""

    def forward(self, hidden_states: torch.Tensor, cache_params: Any = None,  # type: ignore[override]
                attention_mask: torch.Tensor | None = None, **kwargs: Any) -> torch.Tensor:
        if cache_params is not None:  # generation: HF's own recurrent / chunked path
            return super().forward(hidden_states, cache_params, attention_mask, **kwargs)
        Bsz, T, _ = hidden_states.shape
        H, P, N, G = self.num_heads, self.head_dim, self.ssm_state_size, self.n_groups
        inner = self.intermediate_size
        mask = None if attention_mask is None else attention_mask[:, :, None].to(
            hidden_states.dtype)
        if mask is not None:
            hidden_states = hidden_states * mask
        gate, xbc, dt = self.in_proj(hidden_states).split([inner, self.conv_dim, H], dim=-1)
        xbc = self.act(causal_depthwise_conv(xbc, self.conv1d.weight, self.conv1d.bias))
        if mask is not None:
            xbc = xbc * mask
        x, b, c = xbc.split([inner, G * N, G * N], dim=-1)
        lo, hi = self.time_step_limit
        dt = F.softplus(dt + self.dt_bias).clamp(min=lo, max=hi)  # [B, T, H]
        a = -torch.exp(self.A_log.float()) * dt  # log decay per step, [B, T, H]
        decay = torch.exp(segment_sum(a.transpose(1, 2)))  # [B, H, T, T]
        b = b.view(Bsz, T, G, N).transpose(1, 2)  # [B, G, T, N]
        c = c.view(Bsz, T, G, N).transpose(1, 2)
        cb = c @ b.transpose(-1, -2)  # [B, G, T, T], one per group (broadcast when G = 1)
        if G > 1:
            cb = cb.repeat_interleave(H // G, dim=1)
        xh = x.view(Bsz, T, H, P)
        y = (cb * decay) @ (xh * dt[..., None]).transpose(1, 2)  # [B, H, T, P]
        y = y.transpose(1, 2) + xh * self.D[:, None]  # [B, T, H, P]
        y = self.norm(y.reshape(Bsz, T, inner), gate)
        return self.out_proj(y.to(self.out_proj.weight.dtype))


def use_ssd(model: Mamba2ForCausalLM) -> Mamba2ForCausalLM:
    """Make every mixer of ``model`` an :class:`SSDMixer`, in place (its parameters, hooks and
    state are kept: the subclass adds only a forward); returns ``model``."""
    for layer in model.backbone.layers:
        if type(layer.mixer) is Mamba2Mixer:
            layer.mixer.__class__ = SSDMixer
    return model


def build_mamba2(vocab_size: int, d_model: int, n_layer: int, n_heads: int,
                 **extra: Any) -> Mamba2ForCausalLM:
    """A freshly initialised (torch's global generator) Mamba-2 with :class:`SSDMixer` s."""
    return use_ssd(Mamba2ForCausalLM(mamba2_config(vocab_size, d_model, n_layer, n_heads,
                                                   **extra)))


def use_hf_chunked(model: Mamba2ForCausalLM) -> None:
    """The inverse of :func:`use_ssd`: HF's own chunked SSD forward, in place."""
    for layer in model.backbone.layers:
        layer.mixer.__class__ = Mamba2Mixer


def mamba2_heads(d_model: int) -> int | None:
    """The SSD head count of a Mamba-2 of width ``d_model``: the one whose head size 2d / H
    (a whole number from 32 to 128) is nearest 64, Mamba-2's default, in ratio; None where no
    head count gives such a size."""
    inner = MAMBA2_EXPAND * d_model
    heads = [h for h in range(1, inner + 1) if inner % h == 0 and 32 <= inner // h <= 128]
    return min(heads, key=lambda h: (abs(math.log(inner / h / 64)), h)) if heads else None


def mamba2_sizes(task: TokenTask, preset: str) -> tuple[int, int]:
    """(d_model, n_heads) of the Mamba-2 of the preset's depth whose count is closest to the
    transformer's (ties: the narrower), among the widths :func:`mamba2_heads` can split."""
    p = get_preset(preset)
    target = transformer_params(task, preset)

    def cost(d: int) -> int:
        return mamba2_params(task.vocab_size, d, p.n_layer, mamba2_heads(d) or 1)

    d = min((d for d in widths_to(target, cost) if mamba2_heads(d)),
            key=lambda d: (abs(cost(d) - target), d))
    return d, mamba2_heads(d) or 1


def _build(task: TokenTask, preset: str) -> Mamba2ForCausalLM:
    d, h = mamba2_sizes(task, preset)
    n_layer = get_preset(preset).n_layer
    return build_mamba2(task.vocab_size, d, n_layer, h, bayesgeom_preset={
        "n_layer": n_layer, "d_model": d, "n_heads": h, "matched_to": preset})


def _sizes(task: TokenTask, preset: str) -> dict[str, int]:
    d, h = mamba2_sizes(task, preset)
    n_layer = get_preset(preset).n_layer
    return {"n_layer": n_layer, "d_model": d, "n_heads": h,
            "params": mamba2_params(task.vocab_size, d, n_layer, h),
            "transformer_params": transformer_params(task, preset)}


def _ssd_bytes(task: TokenTask, preset: str, n: int, layers: int | None) -> int:
    n_layer = get_preset(preset).n_layer if layers is None else layers
    return ssd_bytes(n, mamba2_sizes(task, preset)[1], task.seq_len, n_layer)


#: HF's Mamba layout (as Mamba-1's), reopened with the SSD mixer it trained with
MAMBA2_SAVED = SavedModelSpec("mamba2", final_norm="backbone.norm_f", final_repeated=True,
                              after_load=use_ssd)

MAMBA2 = ArchSpec("mamba2", MAMBA2_SAVED, build=_build, sizes=_sizes,
                  activation_bytes=_ssd_bytes, activation_what="the SSD [{n}, heads, {T}, {T}]",
                  variants={"hf-chunked": use_hf_chunked})
