"""The questions asked of a wind-tunnel architecture, each answered by its registered spec
(:mod:`windtunnel.arch_registry`, one dict access): build it (:func:`build_model`), how big it
is (:func:`arch_sizes`), whether a batch fits (:func:`check_batch_memory`), and the model
classes ``from_pretrained`` must know (:func:`register_auto_classes`).

What each arch is lives in its own module with its :class:`~windtunnel.arch_spec.ArchSpec`:
``transformer`` (:mod:`windtunnel.transformer`, GPT-2); ``mlp-position`` and ``mlp-flat``
(:mod:`windtunnel.mlp`), ``lstm`` (:mod:`windtunnel.recurrent`), ``mamba``
(:mod:`windtunnel.mamba`) and ``mamba2`` (:mod:`windtunnel.mamba2`), the baselines, each
parameter-matched to the ``transformer`` of the same preset (to well within ±2 %; the
recurrent ones at its depth, by width); the Llama-style transformers ``llama``,
``llama-rope``, ``llama-nope``, ``llama-alibi``, ``llama-bam``, ``llama-bam-ssmax``
(:mod:`windtunnel.llama`) take the preset's sizes as they are.
"""

from __future__ import annotations

import torch
from transformers import AutoConfig, AutoModelForCausalLM, PreTrainedModel

from .arch_registry import ARCH_NAMES, arch_spec, saved_model_specs
from .arch_spec import ArchSpec
from .arch_spec import n_params as n_params  # the one parameter count, re-exported
from .task import TokenTask
from .transformer import get_preset


def register_auto_classes() -> None:
    """Register every wind-tunnel arch's own (config, model) classes with ``AutoConfig`` /
    ``AutoModelForCausalLM`` (globally, idempotent), so ``from_pretrained`` and
    ``interp.load(path)`` open their saved models. Called when this module is imported (the
    first use of a :mod:`windtunnel` public name imports it) and before every model or
    checkpoint load."""
    for saved in saved_model_specs().values():
        if saved.classes is not None:
            config_cls, model_cls = saved.classes
            AutoConfig.register(saved.model_type, config_cls, exist_ok=True)
            AutoModelForCausalLM.register(config_cls, model_cls, exist_ok=True)


register_auto_classes()  # saved wind-tunnel models open with from_pretrained / interp.load


def _spec(arch: str | ArchSpec) -> ArchSpec:
    return arch if isinstance(arch, ArchSpec) else arch_spec(arch)


def build_model(task: TokenTask, arch: str | ArchSpec, preset: str, seed: int = 0,
                ) -> PreTrainedModel:
    """A freshly initialised model (deterministic in ``seed``) of ``arch`` (a name, or its
    resolved spec) for ``task`` at ``preset``."""
    spec = _spec(arch)
    get_preset(preset)
    torch.manual_seed(seed)
    return spec.build(task, preset)


def arch_sizes(task: TokenTask, arch: str | ArchSpec, preset: str) -> dict[str, int]:
    """What ``arch`` is for ``task`` at ``preset``, without building it: ``n_layer``,
    ``d_model``, ``params`` (exact) and its own sizes (``dt_rank``, ``n_heads``, the matched
    ``transformer_params`` ...)."""
    return _spec(arch).sizes(task, preset)


def activation_bytes(task: TokenTask, arch: str | ArchSpec, preset: str, n: int,
                     layers: int | None = None) -> int:
    """Estimated memory, bytes, that an ``n``-sequence batch of ``arch`` needs beyond its
    arrays and logits (attention patterns, a scan's states), for ``layers`` layers (default
    all: training keeps them for the backward pass); 0 where the arch declares none."""
    spec = _spec(arch)
    return 0 if spec.activation_bytes is None else spec.activation_bytes(task, preset, n, layers)


def check_batch_memory(task: TokenTask, arch: str | ArchSpec, preset: str, batch_size: int,
                       eval_batch: int) -> None:
    """Refuse (:class:`TaskConfigError`, naming the memory and what to lower) a training run
    whose batch (with gradients) or evaluation batch (no gradients: one layer's activations at
    a time) would need more memory than the machine has."""
    spec = _spec(arch)
    for n, layers, flag in ((batch_size, None, "--batch-size"), (eval_batch, 1, "")):
        extra = activation_bytes(task, spec, preset, n, layers)
        what = spec.activation_what.format(n=n, T=task.seq_len) if extra else ""
        task.check_memory(n, task.batch_bytes(n) + extra, flag, extra=what)


def attention_archs() -> tuple[str, ...]:
    """The archs with attention patterns (``ArchSpec.attention``), in the registry's order."""
    return tuple(name for name in ARCH_NAMES if arch_spec(name).attention)
