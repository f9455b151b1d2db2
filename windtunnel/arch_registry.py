"""The registry of wind-tunnel architectures: :data:`ARCHS`, the one list of them, one line per
arch naming the module that declares its :class:`~windtunnel.arch_spec.ArchSpec`.

A spec is imported on first use and kept, so every question is one dict access
(:func:`arch_spec`); a saved model's ``model_type`` finds its
:class:`~windtunnel.arch_spec.SavedModelSpec` the same way (:func:`saved_model_spec`, its
index built once). :func:`register` adds an arch declared outside ``windtunnel`` (a test's, a
notebook's). This module imports no torch: the command line checks ``--arch`` against
:data:`ARCH_NAMES` before anything heavy loads.

Example:
    >>> list(ARCH_NAMES)[:3], arch_spec("mamba").saved.model_type
    (['transformer', 'mlp-position', 'mlp-flat'], 'mamba')
    >>> arch_spec("gru")  # doctest: +IGNORE_EXCEPTION_DETAIL
    Traceback (most recent call last):
    TaskConfigError: unknown arch 'gru'; available: transformer, mlp-position, ...
"""

from __future__ import annotations

import importlib
from collections.abc import KeysView

from .arch_spec import ArchSpec, SavedModelSpec
from .names import TaskConfigError

#: arch name -> its spec: ``"module:NAME"`` (``windtunnel.module.NAME``, imported on first use)
#: or the spec itself (:func:`register`). The order is the command line's.
ARCHS: dict[str, str | ArchSpec] = {
    "transformer": "transformer:TRANSFORMER",
    "mlp-position": "mlp:MLP_POSITION",
    "mlp-flat": "mlp:MLP_FLAT",
    "lstm": "recurrent:LSTM",
    "mamba": "mamba:MAMBA",
    "mamba2": "mamba2:MAMBA2",
    "llama": "llama:LLAMA",
    "llama-rope": "llama:LLAMA_ROPE",
    "llama-nope": "llama:LLAMA_NOPE",
    "llama-alibi": "llama:LLAMA_ALIBI",
    "llama-bam": "llama:LLAMA_BAM",
    "llama-bam-ssmax": "llama:LLAMA_BAM_SSMAX",
}

#: the arch names, in :data:`ARCHS`' order (a live view: a registered arch joins it)
ARCH_NAMES: KeysView[str] = ARCHS.keys()

_BY_MODEL_TYPE: dict[str, SavedModelSpec] = {}


def arch_spec(name: str) -> ArchSpec:
    """The spec of arch ``name``; an unknown name is a one-line :class:`TaskConfigError`
    listing the available ones."""
    entry = ARCHS.get(name)
    if entry is None:
        raise TaskConfigError(f"unknown arch {name!r}; available: {', '.join(ARCHS)}")
    if isinstance(entry, str):
        module, attr = entry.split(":")
        entry = getattr(importlib.import_module(f"{__package__}.{module}"), attr)
        if not isinstance(entry, ArchSpec) or entry.name != name:
            raise TypeError(f"{__package__}.{module}.{attr} is not the ArchSpec of {name!r}")
        ARCHS[name] = entry
    return entry


def register(spec: ArchSpec) -> ArchSpec:
    """Add ``spec`` under ``spec.name`` (after the others); a name already taken by another
    spec is refused. Returns ``spec``."""
    if ARCHS.get(spec.name, spec) is not spec:
        raise ValueError(f"arch {spec.name!r} is already registered")
    ARCHS[spec.name] = spec
    _BY_MODEL_TYPE.clear()
    return spec


def unregister(name: str) -> None:
    """Remove arch ``name`` (one :func:`register` added: a test's, after its run)."""
    ARCHS.pop(name, None)
    _BY_MODEL_TYPE.clear()


def saved_model_specs() -> dict[str, SavedModelSpec]:
    """``model_type`` -> its :class:`SavedModelSpec`, over every registered arch (built on the
    first call, which imports every arch module). Two archs that save as one type must hold
    the same spec object (else ``TypeError``)."""
    if not _BY_MODEL_TYPE:
        owner: dict[str, str] = {}
        for name in list(ARCHS):
            saved = arch_spec(name).saved
            seen = _BY_MODEL_TYPE.setdefault(saved.model_type, saved)
            if seen is not saved:
                raise TypeError(f"archs {owner[saved.model_type]!r} and {name!r} save as "
                                f"{saved.model_type!r} with different SavedModelSpecs")
            owner.setdefault(saved.model_type, name)
    return _BY_MODEL_TYPE


def saved_model_spec(model_type: str | None) -> SavedModelSpec | None:
    """The :class:`SavedModelSpec` of a saved model's ``model_type``; None for a type no
    wind-tunnel arch saves as."""
    return saved_model_specs().get(model_type or "")
