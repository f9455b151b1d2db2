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


def build_model(task: TokenTask, arch: str, preset: str, seed: int = 0) -> PreTrainedModel:
    """A freshly initialised model (deterministic in ``seed``) for ``task``."""
    if arch not in ARCHS:
        raise TaskConfigError(f"unknown arch {arch!r}; available: {', '.join(ARCHS)}")
    get_preset(preset)
    torch.manual_seed(seed)
    return ARCHS[arch](task, preset)
