"""Mamba-1 (arch ``mamba``, :data:`MAMBA`): Hugging Face's stock ``MambaForCausalLM``, matched.

A stock ``MambaConfig`` (:func:`mamba_config`): pure-PyTorch selective scan on CPU, mambapy's
parallel scan where it is installed (``use_mambapy``; a bayesgeom dependency), so its saved
model directory loads with plain transformers and ``interp.load(path)`` without bayesgeom.
Unlike the authors' simplified block it has no positional embedding and uses RMSNorm pre-norm
blocks (HF's Mamba-1 block); it is HF's, not the authors'. HF's Mamba zeroes the padded states,
so left-padded batches give the unpadded prompts' outputs at the real tokens.

Matched to the transformer preset at its depth by ``d_model`` and the time-step rank
(``dt_rank``, ≥ HF's default ceil(d/16)): :func:`mamba_sizes`, within a few hundred parameters.
Shapes: ids [B, T] -> logits [B, T, V]; ``hidden_states`` are every block's output, then the
last one again after the final norm (HF's Mamba layout).
"""

from __future__ import annotations

import math
from typing import Any

from transformers import MambaConfig, MambaForCausalLM, PreTrainedModel

from .arch_spec import ArchSpec, SavedModelSpec, widths_to
from .task import TokenTask
from .transformer import get_preset, transformer_params

#: the Mamba sizes that stay fixed when a preset is matched (the authors': d_state 16, expand 2,
#: causal depthwise conv of kernel 4)
MAMBA_STATE, MAMBA_EXPAND, MAMBA_CONV = 16, 2, 4


def mamba_config(vocab_size: int, d_model: int, n_layer: int, dt_rank: int | str = "auto",
                 **extra: Any) -> MambaConfig:
    """A ``MambaConfig`` of width ``d_model`` and ``n_layer`` blocks for a wind-tunnel
    vocabulary (d_state 16, expand 2, conv kernel 4, tied head, no cache, no special tokens);
    ``dt_rank`` is the rank of the time-step projection (``"auto"``: ceil(d / 16))."""
    return MambaConfig(
        vocab_size=vocab_size,
        hidden_size=d_model,
        num_hidden_layers=n_layer,
        state_size=MAMBA_STATE,
        expand=MAMBA_EXPAND,
        conv_kernel=MAMBA_CONV,
        time_step_rank=dt_rank,
        use_mambapy=True,  # mambapy's parallel scan where installed, else the sequential scan
        use_cache=False,
        tie_word_embeddings=True,
        pad_token_id=None,
        bos_token_id=None,
        eos_token_id=None,
        **extra,
    )


def mamba_params(vocab_size: int, d_model: int, n_layer: int, dt_rank: int | None = None) -> int:
    """Parameter count of ``MambaForCausalLM(mamba_config(...))`` (tied head counted once)."""
    d, N, k = d_model, MAMBA_STATE, MAMBA_CONV
    inner = MAMBA_EXPAND * d
    r = math.ceil(d / 16) if dt_rank is None else dt_rank
    block = (d  # norm
             + d * 2 * inner  # in_proj
             + inner * k + inner  # depthwise conv with bias
             + inner * (r + 2 * N)  # x_proj -> (dt, B, C)
             + r * inner + inner  # dt_proj
             + inner * N + inner  # A_log, D
             + inner * d)  # out_proj
    return vocab_size * d + n_layer * block + d  # embedding (tied head), blocks, final norm


def mamba_sizes(task: TokenTask, preset: str) -> tuple[int, int]:
    """(d_model, dt_rank) of the Mamba of the preset's depth whose count is closest to the
    transformer's, the rank taken from HF's default ceil(d/16) to 8 more (ties: the lower)."""
    p = get_preset(preset)
    target = transformer_params(task, preset)
    V = task.vocab_size

    def cost(d: int, r: int | None = None) -> int:
        return mamba_params(V, d, p.n_layer, r)

    best = min(((d, r) for d in widths_to(target, cost)
                for r in range(math.ceil(d / 16), math.ceil(d / 16) + 9)),
               key=lambda dr: (abs(cost(*dr) - target), dr[1]))
    return best


def build_mamba(task: TokenTask, preset: str) -> MambaForCausalLM:
    """The matched Mamba, freshly initialised (torch's global generator)."""
    d, r = mamba_sizes(task, preset)
    n_layer = get_preset(preset).n_layer
    return MambaForCausalLM(mamba_config(
        task.vocab_size, d, n_layer, r,
        bayesgeom_preset={"n_layer": n_layer, "d_model": d, "dt_rank": r, "matched_to": preset}))


def _sizes(task: TokenTask, preset: str) -> dict[str, int]:
    d, r = mamba_sizes(task, preset)
    n_layer = get_preset(preset).n_layer
    return {"n_layer": n_layer, "d_model": d, "dt_rank": r,
            "params": mamba_params(task.vocab_size, d, n_layer, r),
            "transformer_params": transformer_params(task, preset)}


def scan_bytes(task: TokenTask, preset: str, n: int, layers: int | None = None) -> int:
    """Estimated memory of the selective scan for an ``n``-sequence batch: float32
    [n, 2d, T, 16] eight times per layer (discretised A and B, their input product, the
    states, and their gradients), for ``layers`` layers (default all). Measured: a bijection
    V = 20 step on the small preset at batch 128 peaks 677 MiB above the batch; this estimate
    says 740 MiB."""
    n_layer = get_preset(preset).n_layer if layers is None else layers
    d, _ = mamba_sizes(task, preset)
    return 8 * 4 * n * 2 * d * task.seq_len * MAMBA_STATE * n_layer


def use_reference_scan(model: PreTrainedModel) -> None:
    """HF's sequential reference scan instead of mambapy's parallel one, in place."""
    for layer in model.backbone.layers:
        layer.mixer.use_mambapy = False


#: HF's Mamba layout: hidden_states are the block outputs, then the last again after the norm
MAMBA_SAVED = SavedModelSpec("mamba", final_norm="backbone.norm_f", final_repeated=True)

MAMBA = ArchSpec("mamba", MAMBA_SAVED, build=build_mamba, sizes=_sizes,
                 activation_bytes=scan_bytes,
                 activation_what="the selective scan [{n}, 2d, {T}, 16]",
                 variants={"reference-scan": use_reference_scan})
