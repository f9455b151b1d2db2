"""Errors raised by ``interp``: each names what was wrong and how to fix it, in one line.

All derive from :class:`InterpError`, a :class:`records.UsageError` (so a ``ValueError``, exit
status 2), so callers and the CLI can catch one type. Two are faults (exit status 1,
``exit_code = records.errors.EXIT_FAULT``), not usage errors: :class:`NonFiniteActivationError`
(NaN or inf arose in a forward pass; also a ``FloatingPointError``) and :class:`StoreError` (an
activation store on disk is damaged); a :class:`StoreMismatchError` (the folder holds another
capture) is a usage error again. Damaged or unwritable files elsewhere (a truncated model
``*.safetensors``, a full disk, a read-only cache) raise :class:`records.FileFault` (status 1).

Example:
    >>> from bayesgeom.records import exit_code
    >>> exit_code(PromptError("prompt 0 is an empty string")), exit_code(StoreError("damaged"))
    (2, 1)
"""

from __future__ import annotations

from ..records.errors import EXIT_FAULT, EXIT_USAGE, UsageError


class InterpError(UsageError):
    """Base class for user-facing ``interp`` errors (a ``ValueError``; exit status 2)."""


class ModelNotLoadedError(InterpError):
    """A model name, path or bare module where a loaded :class:`InterpModel` is needed (load it
    first with ``interp.load`` or ``bayesgeom.open_model``)."""


class UnknownSiteError(InterpError):
    """A site name or layer index that the model does not have (the message lists valid ones)."""


class SiteNotLocatedError(InterpError):
    """The model's architecture has no module for a site (e.g. a fused QKV of unknown layout)."""


class UnsupportedArchitectureError(InterpError):
    """The model has no recognisable decoder-layer stack."""


class ModelNotAvailableError(InterpError):
    """A model name or path cannot be loaded here (not on disk, not cached, Hub unreachable,
    pickle weights only, an unavailable device)."""


class PickleWeightsError(ModelNotAvailableError):
    """A model whose weights are pickle files only (``pytorch_model.bin``); bayesgeom loads
    safetensors unless ``allow_pickle=True``."""


class PromptError(InterpError):
    """An empty prompt list, an empty prompt, a prompt of the wrong type, a prompt longer than
    the model context, or text prompts for a model without a tokenizer."""


class PositionError(InterpError):
    """A requested position does not exist in a prompt."""


class DirectionShapeError(InterpError):
    """An intervention vector or direction whose shape does not match the site, or that is
    not finite (or zero where a unit direction is needed)."""


class NonFiniteActivationError(InterpError, FloatingPointError):
    """NaN or inf in a captured activation, an edited site or the logits of an intervened
    forward (the message names the site or intervention, prompt and position). A fault."""

    exit_code = EXIT_FAULT


class StoreError(InterpError):
    """An activation-store directory that is damaged (a truncated shard, a corrupt manifest).
    A fault; the message names the file."""

    exit_code = EXIT_FAULT


class StoreMismatchError(StoreError):
    """The store directory holds another capture or other files (choose another ``--out``):
    a usage error."""

    exit_code = EXIT_USAGE


class NilInterventionError(InterpError):
    """An intervention left its site numerically unchanged (raised only with ``strict=True``)."""


class NilInterventionWarning(UserWarning):
    """An intervention left its site numerically unchanged (or never matched a position)."""
