"""Errors raised by ``interp``: each names what was wrong and how to fix it.

All derive from :class:`InterpError` (a ``ValueError``), so callers and the CLI can catch one type.
"""

from __future__ import annotations


class InterpError(ValueError):
    """Base class for user-facing ``interp`` errors."""


class UnknownSiteError(InterpError):
    """A site name or layer index that the model does not have (the message lists valid ones)."""


class SiteNotLocatedError(InterpError):
    """The model's architecture has no module for a site (e.g. a fused QKV of unknown layout)."""


class UnsupportedArchitectureError(InterpError):
    """The model has no recognisable decoder-layer stack."""


class ModelNotAvailableError(InterpError):
    """A model name or path cannot be loaded here (not on disk, not cached, Hub unreachable)."""


class PromptError(InterpError):
    """An empty prompt list, an empty prompt, or a prompt longer than the model context."""


class PositionError(InterpError):
    """A requested position does not exist in a prompt."""


class DirectionShapeError(InterpError):
    """An intervention vector or direction whose shape does not match the site."""


class NonFiniteActivationError(InterpError, FloatingPointError):
    """A captured activation holds NaN or inf (the message names the site, prompt and position)."""


class StoreError(InterpError):
    """An activation-store directory that is damaged or belongs to a different capture."""


class NilInterventionError(InterpError):
    """An intervention left its site numerically unchanged (raised only with ``strict=True``)."""


class NilInterventionWarning(UserWarning):
    """An intervention left its site numerically unchanged (or never matched a position)."""
