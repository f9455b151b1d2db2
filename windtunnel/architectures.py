"""Registry of wind-tunnel architectures; the baselines are parameter-matched to the transformer.

``build_model(task, "mlp-position", "paper")`` sizes the MLP so its parameter count matches the
``paper`` transformer for the same task to well within ±2 %. The recurrent baselines
(:mod:`windtunnel.recurrent`) keep the transformer preset's depth and are matched by width:
``lstm`` by ``d_model`` (one LSTM layer costs 8d² + 8d, so the step between widths is about
2/d of the total: ≤ 1 % off from d = 100, ≤ 3 % at the tiny preset's d ≈ 32), ``mamba`` by
``d_model`` and the time-step rank (``dt_rank``, ≥ HF's default ceil(d/16)), which lands
within a few hundred parameters, ``mamba2`` (:mod:`windtunnel.mamba2`) by ``d_model``, its
SSD head count the one whose head size is nearest Mamba-2's 64 (:func:`mamba2_heads`).
:func:`recurrent_sizes` says what was chosen. The Llama-style transformers (``llama``,
``llama-rope``, ``llama-nope``: :mod:`windtunnel.llama`) take the preset's sizes as they are;
the baselines stay matched to the GPT-2 ``transformer``.
"""

from __future__ import annotations

import math
from collections.abc import Callable

import torch
from transformers import AutoConfig, AutoModelForCausalLM, PreTrainedModel

from .llama import WindTunnelLlama, WindTunnelLlamaConfig, build_llama
from .mamba2 import build_mamba2, mamba2_params, ssd_bytes
from .mlp import WindTunnelMLP, WindTunnelMLPConfig
from .recurrent import WindTunnelLSTM, WindTunnelLSTMConfig, lstm_params, mamba_config, mamba_params
from .task import TaskConfigError, TokenTask
from .transformer import build_transformer, get_preset, transformer_config

#: the wind tunnel's own model classes (config, model); GPT-2 and Mamba are stock transformers
AUTO_CLASSES = ((WindTunnelMLPConfig, WindTunnelMLP), (WindTunnelLSTMConfig, WindTunnelLSTM),
                (WindTunnelLlamaConfig, WindTunnelLlama))


def register_auto_classes() -> None:
    """Register :data:`AUTO_CLASSES` with ``AutoConfig`` / ``AutoModelForCausalLM`` (globally,
    idempotent), so ``from_pretrained`` and ``interp.load(path)`` open their saved models.
    Called when this module is imported (the first use of a :mod:`windtunnel` public name
    imports it) and before every model or checkpoint load."""
    for config_cls, model_cls in AUTO_CLASSES:
        AutoConfig.register(config_cls.model_type, config_cls, exist_ok=True)
        AutoModelForCausalLM.register(config_cls, model_cls, exist_ok=True)


register_auto_classes()  # saved wind-tunnel models open with from_pretrained / interp.load


def n_params(model: torch.nn.Module) -> int:
    """Number of distinct parameters (tied weights counted once, unused ones included), of
    any module: token models and the sticky chain's (:mod:`windtunnel.sticky_chain`) alike."""
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


def _widths(target: int, cost: Callable[[int], int]) -> range:
    """Widths from 4 up to the first whose ``cost`` (growing with width) reaches ``target``."""
    d = 4
    while cost(d) < target:
        d += 1
    return range(4, d + 1)


def lstm_config(task: TokenTask, preset: str) -> WindTunnelLSTMConfig:
    """The LSTM of the preset's depth whose width brings its count closest to the
    transformer's."""
    p = get_preset(preset)
    target = transformer_params(task, preset)
    V, P = task.vocab_size, task.max_seq_len

    def cost(d: int) -> int:
        return lstm_params(V, P, d, p.n_layer)

    d = min(_widths(target, cost), key=lambda d: abs(cost(d) - target))
    return WindTunnelLSTMConfig(vocab_size=V, n_positions=P, d_model=d, n_layer=p.n_layer,
                                bayesgeom_preset={"n_layer": p.n_layer, "d_model": d,
                                                  "matched_to": preset})


def mamba_sizes(task: TokenTask, preset: str) -> tuple[int, int]:
    """(d_model, dt_rank) of the Mamba of the preset's depth whose count is closest to the
    transformer's, the rank taken from HF's default ceil(d/16) to 8 more (ties: the lower)."""
    p = get_preset(preset)
    target = transformer_params(task, preset)
    V = task.vocab_size

    def cost(d: int, r: int | None = None) -> int:
        return mamba_params(V, d, p.n_layer, r)

    best = min(((d, r) for d in _widths(target, cost)
                for r in range(math.ceil(d / 16), math.ceil(d / 16) + 9)),
               key=lambda dr: (abs(cost(*dr) - target), dr[1]))
    return best


def mamba2_heads(d_model: int) -> int | None:
    """The SSD head count of a Mamba-2 of width ``d_model``: the one whose head size 2d / H
    (a whole number from 32 to 128) is nearest 64, Mamba-2's default, in ratio; None where no
    head count gives such a size."""
    inner = 2 * d_model
    heads = [h for h in range(1, inner + 1) if inner % h == 0 and 32 <= inner // h <= 128]
    return min(heads, key=lambda h: (abs(math.log(inner / h / 64)), h)) if heads else None


def mamba2_sizes(task: TokenTask, preset: str) -> tuple[int, int]:
    """(d_model, n_heads) of the Mamba-2 of the preset's depth whose count is closest to the
    transformer's (ties: the narrower), among the widths :func:`mamba2_heads` can split."""
    p = get_preset(preset)
    target = transformer_params(task, preset)

    def cost(d: int) -> int:
        return mamba2_params(task.vocab_size, d, p.n_layer, mamba2_heads(d) or 1)

    d = min((d for d in _widths(target, cost) if mamba2_heads(d)),
            key=lambda d: (abs(cost(d) - target), d))
    return d, mamba2_heads(d) or 1


def _build_lstm(task: TokenTask, preset: str) -> PreTrainedModel:
    return WindTunnelLSTM(lstm_config(task, preset))


def _build_mamba(task: TokenTask, preset: str) -> PreTrainedModel:
    from transformers import MambaForCausalLM

    d, r = mamba_sizes(task, preset)
    n_layer = get_preset(preset).n_layer
    return MambaForCausalLM(mamba_config(
        task.vocab_size, d, n_layer, r,
        bayesgeom_preset={"n_layer": n_layer, "d_model": d, "dt_rank": r, "matched_to": preset}))


def _build_mamba2(task: TokenTask, preset: str) -> PreTrainedModel:
    d, h = mamba2_sizes(task, preset)
    n_layer = get_preset(preset).n_layer
    return build_mamba2(task.vocab_size, d, n_layer, h, bayesgeom_preset={
        "n_layer": n_layer, "d_model": d, "n_heads": h, "matched_to": preset})


def recurrent_sizes(task: TokenTask, arch: str, preset: str) -> dict[str, int]:
    """What the matched ``arch`` (``lstm``, ``mamba`` or ``mamba2``) is for ``task`` at
    ``preset``: its depth, width (and rank or heads), parameter count and the transformer's."""
    n_layer = get_preset(preset).n_layer
    target = transformer_params(task, preset)
    if arch == "lstm":
        d = lstm_config(task, preset).d_model
        n = lstm_params(task.vocab_size, task.max_seq_len, d, n_layer)
        return {"n_layer": n_layer, "d_model": d, "params": n, "transformer_params": target}
    if arch == "mamba":
        d, r = mamba_sizes(task, preset)
        return {"n_layer": n_layer, "d_model": d, "dt_rank": r,
                "params": mamba_params(task.vocab_size, d, n_layer, r),
                "transformer_params": target}
    if arch == "mamba2":
        d, h = mamba2_sizes(task, preset)
        return {"n_layer": n_layer, "d_model": d, "n_heads": h,
                "params": mamba2_params(task.vocab_size, d, n_layer, h),
                "transformer_params": target}
    raise TaskConfigError(f"{arch!r} is not a recurrent arch; use 'lstm', 'mamba' or 'mamba2'")


ARCHS: dict[str, Callable[[TokenTask, str], PreTrainedModel]] = {
    "transformer": lambda task, preset: build_transformer(task, get_preset(preset)),
    "mlp-position": _build_mlp("position"),
    "mlp-flat": _build_mlp("flat"),
    "lstm": _build_lstm,
    "mamba": _build_mamba,
    # Mamba-2 (HF's model, bayesgeom's quadratic SSD forward): scalar decay per head
    "mamba2": _build_mamba2,
    # Llama-style (windtunnel.llama: RMSNorm, bias-free attention) at the transformer's preset
    # sizes: learned absolute positions (the paper's production model), RoPE, or none
    "llama": lambda task, preset: build_llama(task, get_preset(preset), "learned"),
    "llama-rope": lambda task, preset: build_llama(task, get_preset(preset), "rope"),
    "llama-nope": lambda task, preset: build_llama(task, get_preset(preset), "nope"),
    # additive priors on the scores (windtunnel.position_priors): ALiBi's fixed slopes, BAM's
    # learned per-layer prior (starts as NoPE), BAM with SSMax
    "llama-alibi": lambda task, preset: build_llama(task, get_preset(preset), "alibi"),
    "llama-bam": lambda task, preset: build_llama(task, get_preset(preset), "bam"),
    "llama-bam-ssmax": lambda task, preset: build_llama(task, get_preset(preset), "bam",
                                                        ssmax=True),
}

#: the archs with attention (their patterns cost memory: :func:`attention_bytes`)
ATTENTION_ARCHS = ("transformer", "llama", "llama-rope", "llama-nope", "llama-alibi",
                   "llama-bam", "llama-bam-ssmax")


def attention_bytes(arch: str, preset: str, n: int, seq_len: int, layers: int | None = None,
                    ) -> int:
    """Estimated memory of the attention weights of an ``n``-sequence batch: float32
    [n, heads, T, T], two copies (scores and probabilities) per layer, for ``layers`` layers
    (default all: training keeps them for the backward pass); 0 for the archs without
    attention. Measured: a bijection V = 400 step on the small preset peaks 5.5 GiB above its
    batch, this estimate plus the logits says 5.4 GiB. The Llama-style archs hold the same
    patterns (eager)."""
    if arch not in ATTENTION_ARCHS:
        return 0
    p = get_preset(preset)
    return 2 * 4 * n * p.n_head * seq_len * seq_len * (p.n_layer if layers is None else layers)


def scan_bytes(task: TokenTask, arch: str, preset: str, n: int, layers: int | None = None,
               ) -> int:
    """Estimated memory of Mamba's selective scan for an ``n``-sequence batch: float32
    [n, 2d, T, 16] eight times per layer (discretised A and B, their input product, the
    states, and their gradients), for ``layers`` layers (default all); 0 for the other archs.
    Measured: a bijection V = 20 step on the small preset at batch 128 peaks 677 MiB above
    the batch; this estimate says 740 MiB. For ``mamba2``: its quadratic SSD,
    :func:`windtunnel.mamba2.ssd_bytes`."""
    n_layer = get_preset(preset).n_layer if layers is None else layers
    if arch == "mamba2":
        return ssd_bytes(n, mamba2_sizes(task, preset)[1], task.seq_len, n_layer)
    if arch != "mamba":
        return 0
    d, _ = mamba_sizes(task, preset)
    return 8 * 4 * n * 2 * d * task.seq_len * 16 * n_layer


def check_batch_memory(task: TokenTask, arch: str, preset: str, batch_size: int,
                       eval_batch: int) -> None:
    """Refuse (:class:`TaskConfigError`, naming the memory and what to lower) a training run
    whose batch (with gradients) or evaluation batch (no gradients: one layer's attention at a
    time) would need more memory than the machine has."""
    for n, layers, flag in ((batch_size, None, "--batch-size"), (eval_batch, 1, "")):
        att = attention_bytes(arch, preset, n, task.seq_len, layers)
        scan = scan_bytes(task, arch, preset, n, layers)
        extra = (f"attention [{n}, heads, {task.seq_len}, {task.seq_len}]" if att else
                 f"the SSD [{n}, heads, {task.seq_len}, {task.seq_len}]" if scan and
                 arch == "mamba2" else
                 f"the selective scan [{n}, 2d, {task.seq_len}, 16]" if scan else "")
        task.check_memory(n, task.batch_bytes(n) + att + scan, flag, extra=extra)


def build_model(task: TokenTask, arch: str, preset: str, seed: int = 0) -> PreTrainedModel:
    """A freshly initialised model (deterministic in ``seed``) for ``task``."""
    if arch not in ARCHS:
        raise TaskConfigError(f"unknown arch {arch!r}; available: {', '.join(ARCHS)}")
    get_preset(preset)
    torch.manual_seed(seed)
    return ARCHS[arch](task, preset)
