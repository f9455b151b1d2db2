"""What a wind-tunnel architecture declares, once, in its own module: an :class:`ArchSpec` (how
to build it, how big it is, what memory a batch needs beyond the batch) holding the
:class:`SavedModelSpec` of the Hugging Face ``model_type`` it saves as (its classes, how it
loads, where its final norm and head are, how its hidden states are laid out).
:mod:`windtunnel.arch_registry` lists the specs; every question about an arch is one lookup
there, never a branch on its name.

This module imports no torch (the command line checks arch names before anything heavy
loads); the callables it holds are the arch modules', which do.

Example:
    >>> from bayesgeom.windtunnel.arch_registry import arch_spec
    >>> s = arch_spec("lstm")
    >>> s.name, s.saved.model_type, s.attention, s.saved.final_norm
    ('lstm', 'bayesgeom_lstm', False, 'norm')
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    import torch
    from transformers import PretrainedConfig, PreTrainedModel

    from .task import TokenTask


def no_position_limit(config: PretrainedConfig) -> int | None:
    """No learned position table: the model embeds any number of positions (None)."""
    return None


@dataclass(frozen=True, eq=False)
class SavedModelSpec:
    """How a saved model of one Hugging Face ``model_type`` opens and is read; every arch that
    saves as that type holds this same object (the registry refuses two that differ).

    ``final_norm`` / ``lm_head``: attribute paths from the model to its final norm and LM head
    (the logit lens applies ``lm_head(final_norm(h))`` to a block's output h [B, T, d]).
    ``classes``: (config class, model class) to register with ``AutoConfig`` /
    ``AutoModelForCausalLM`` (None: a stock transformers class). ``load_kwargs``: extra
    ``from_pretrained`` arguments (the kernels it trained with). ``after_load``: applied, in
    place, to the loaded model (the forward it trained with). ``final_repeated``: HF Mamba's
    ``hidden_states`` layout (every block's output, then the last one again after the final
    norm) instead of HF's usual one (the embedding output first, then every block's output).
    ``position_limit(config)``: how many positions the model can embed (its learned table's
    rows), None without a table."""

    model_type: str
    final_norm: str
    lm_head: str = "lm_head"
    classes: tuple[type, type] | None = None
    load_kwargs: Mapping[str, Any] = field(default_factory=dict)
    after_load: Callable[[PreTrainedModel], object] | None = None
    final_repeated: bool = False
    position_limit: Callable[[PretrainedConfig], int | None] = no_position_limit


@dataclass(frozen=True, eq=False)
class ArchSpec:
    """One wind-tunnel architecture, as ``--arch name`` names it.

    ``build(task, preset)``: a fresh model for ``task`` at the preset's size, initialised from
    torch's global generator (:func:`windtunnel.architectures.build_model` seeds it first).
    ``sizes(task, preset)``: what it is at that size, without building it: ``n_layer`` (the
    blocks the logit lens reads), ``d_model``, ``params`` (exact, tied weights once) and the
    arch's own sizes. ``activation_bytes(task, preset, n, layers)``: bytes an ``n``-sequence
    batch needs beyond its arrays and logits, for ``layers`` layers (None: all, with
    gradients); it has no default: None says nothing grows with T² or a scan's state.
    ``activation_what``: what those bytes hold, formatted with ``n`` and ``T`` (the sequence
    length), for the memory refusal. ``attention``: it has attention patterns (so it needs
    ``activation_bytes``). ``variants``: other forward implementations of the same weights,
    by name, each applied in place to a built model (``benchmarks/arch_step_time.py`` times
    them as ``arch/name``)."""

    name: str
    saved: SavedModelSpec
    build: Callable[[TokenTask, str], PreTrainedModel]
    sizes: Callable[[TokenTask, str], dict[str, int]]
    activation_bytes: Callable[[TokenTask, str, int, int | None], int] | None
    activation_what: str = ""
    attention: bool = False
    variants: Mapping[str, Callable[[PreTrainedModel], object]] = field(default_factory=dict)

    def __post_init__(self) -> None:
        if self.attention and self.activation_bytes is None:
            raise ValueError(f"arch {self.name!r}: attention patterns cost memory; give "
                             "activation_bytes")
        if (self.activation_bytes is None) != (not self.activation_what):
            raise ValueError(f"arch {self.name!r}: activation_bytes and activation_what go "
                             "together (what the estimate holds, for the memory refusal)")


def n_params(model: torch.nn.Module) -> int:
    """Number of distinct parameters (tied weights counted once, unused ones included), of
    any module: token models and the sticky chain's (:mod:`windtunnel.sticky_chain`) alike."""
    return sum(p.numel() for p in model.parameters())


def widths_to(target: int, cost: Callable[[int], int]) -> range:
    """Widths from 4 up to the first whose ``cost`` (parameters, growing with width) reaches
    ``target``: the candidates a baseline matched to ``target`` parameters is chosen from."""
    d = 4
    while cost(d) < target:
        d += 1
    return range(4, d + 1)


def module_at(model: Any, path: str) -> Any:
    """The attribute of ``model`` at the dotted ``path`` (``"transformer.ln_f"``)."""
    for part in path.split("."):
        model = getattr(model, part)
    return model
