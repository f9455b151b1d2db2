"""Typed results to and from JSON: ``summary.json`` is the serialisation of a result dataclass.

:func:`to_json` turns a dataclass (nested dataclasses, dicts, lists, tuples, numpy values) into
strict JSON values (NaN -> null); :func:`from_json` rebuilds the dataclass from them with
``dacite``, turning null back into NaN where the field is a plain ``float``. Field metadata:
``{"serialise": False}`` leaves a field out; ``{"flatten": True}`` (a dataclass-valued field of
the top-level result) writes its fields at the top level, beside the result's own.

Example:
    >>> from dataclasses import dataclass
    >>> @dataclass
    ... class R:
    ...     mae: float
    ...     ks: tuple[int, ...]
    >>> from_json(R, to_json(R(float("nan"), (0, 1))))
    R(mae=nan, ks=(0, 1))
"""

from __future__ import annotations

import dataclasses
import math
import typing
from pathlib import Path
from typing import Any, TypeVar

import dacite

from .files import json_safe, read_json, write_json

T = TypeVar("T")


def _plain(obj: Any) -> Any:
    if dataclasses.is_dataclass(obj) and not isinstance(obj, type):
        out: dict[str, Any] = {}
        for f in dataclasses.fields(obj):
            if not f.metadata.get("serialise", True):
                continue
            value = _plain(getattr(obj, f.name))
            if f.metadata.get("flatten"):
                out.update(value)
            else:
                out[f.name] = value
        return out
    if isinstance(obj, dict):
        return {k: _plain(v) for k, v in obj.items()}
    if isinstance(obj, list | tuple):
        return [_plain(v) for v in obj]
    return obj


def to_json(obj: Any) -> Any:
    """Strict-JSON values of a (nested) dataclass; fields with ``metadata={"serialise": False}``
    (arrays kept for reports, say) are left out."""
    return json_safe(_plain(obj))


def _float(v: Any) -> float:
    return math.nan if v is None else float(v)


_CONFIG = dacite.Config(type_hooks={float: _float}, cast=[tuple, Path], strict=False)


def from_json(cls: type[T], data: Any) -> T:
    """Rebuild ``cls`` from :func:`to_json` output (raises ``dacite`` errors on a mismatch)."""
    data = dict(data)
    hints = typing.get_type_hints(cls)
    for f in dataclasses.fields(cls):  # type: ignore[arg-type]
        if f.metadata.get("flatten"):
            sub = hints[f.name]
            data[f.name] = {g.name: data[g.name] for g in dataclasses.fields(sub)
                            if g.name in data}
    return dacite.from_dict(cls, data, config=_CONFIG)


def write_result(path: str | Path, result: Any) -> Path:
    """Write the result dataclass ``result`` as strict JSON (:func:`to_json`) to ``path``,
    atomically; returns ``path``."""
    return write_json(path, to_json(result))


def read_result(cls: type[T], path: str | Path) -> T:
    """The ``cls`` dataclass that :func:`write_result` wrote to ``path`` (a missing or damaged
    file is a :class:`~records.errors.FileFault`; a file of another shape a ``dacite`` error)."""
    return from_json(cls, read_json(path))
