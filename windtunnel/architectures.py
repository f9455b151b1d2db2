"""Registry of wind-tunnel architectures; MLP baselines are parameter-matched to the transformer.

``build_model(task, "mlp-position", "paper")`` sizes the MLP so its parameter count matches the
``paper`` transformer for the same task to well within ±2 %.
"""

from __future__ import annotations

from collections.abc import Callable

import torch
from transformers import PreTrainedModel

from windtunnel.mlp import WindTunnelMLP, WindTunnelMLPConfig
from windtunnel.task import TaskConfigError, TokenTask
from windtunnel.transformer import build_transformer, get_preset, transformer_config


def n_params(model: torch.nn.Module) -> int:
    """Number of distinct parameters (tied weights counted once)."""
    return sum(p.numel() for p in model.parameters())


def transformer_params(task: TokenTask, preset: str) -> int:
    with torch.device("meta"):
        from transformers import GPT2LMHeadModel

        return n_params(GPT2LMHeadModel(transformer_config(task, get_preset(preset))))


def _block_params(width: int, d_inner: int) -> int:
    return 2 * width + width * d_inner + d_inner + d_inner * width + width


def _solve_inner(target: int, fixed: int, width: int, n_blocks: int) -> int:
    """MLP width inside each block that brings the total closest to ``target``."""
    per_unit = n_blocks * (2 * width + 1)
    inner = round((target - fixed - n_blocks * 3 * width) / per_unit)
    if inner < 1:
        raise TaskConfigError(f"cannot match {target:,} parameters with an MLP of width {width}")
    return inner


def mlp_config(task: TokenTask, kind: str, preset: str) -> WindTunnelMLPConfig:
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


def _build_mlp(kind: str) -> Callable[[TokenTask, str], PreTrainedModel]:
    return lambda task, preset: WindTunnelMLP(mlp_config(task, kind, preset))


ARCHS: dict[str, Callable[[TokenTask, str], PreTrainedModel]] = {
    "transformer": lambda task, preset: build_transformer(task, get_preset(preset)),
    "mlp-position": _build_mlp("position"),
    "mlp-flat": _build_mlp("flat"),
}


def attention_bytes(arch: str, preset: str, n: int, seq_len: int, layers: int | None = None,
                    ) -> int:
    """Estimated memory of the attention weights of an ``n``-sequence batch: float32
    [n, heads, T, T], two copies (scores and probabilities) per layer, for ``layers`` layers
    (default all: training keeps them for the backward pass); 0 for the MLPs. Measured: a
    bijection V = 400 step on the small preset peaks 5.5 GiB above its batch, this estimate
    plus the logits says 5.4 GiB."""
    if arch != "transformer":
        return 0
    p = get_preset(preset)
    return 2 * 4 * n * p.n_head * seq_len * seq_len * (p.n_layer if layers is None else layers)


def check_batch_memory(task: TokenTask, arch: str, preset: str, batch_size: int,
                       eval_batch: int) -> None:
    """Refuse (:class:`TaskConfigError`, naming the memory and what to lower) a training run
    whose batch (with gradients) or evaluation batch (no gradients: one layer's attention at a
    time) would need more memory than the machine has."""
    for n, layers, flag in ((batch_size, None, "--batch-size"), (eval_batch, 1, "")):
        att = attention_bytes(arch, preset, n, task.seq_len, layers)
        task.check_memory(n, task.batch_bytes(n) + att, flag,
                          extra=f"attention [{n}, heads, {task.seq_len}, {task.seq_len}]"
                          if att else "")


def build_model(task: TokenTask, arch: str, preset: str, seed: int = 0) -> PreTrainedModel:
    """A freshly initialised model (deterministic in ``seed``) for ``task``."""
    if arch not in ARCHS:
        raise TaskConfigError(f"unknown arch {arch!r}; available: {', '.join(ARCHS)}")
    get_preset(preset)
    torch.manual_seed(seed)
    return ARCHS[arch](task, preset)
