"""What an experiment's options can be checked against before its model loads: the kind of
model ``--model`` names (a text model or a wind tunnel, read from the folder's records) and,
where it is known without torch, its layer count.

An option declared ``needs="text model"`` or ``needs="wind tunnel"`` (:func:`records.option`)
is read only by that kind of model, so given for the other kind it is refused
(:func:`check_model_kind`); an option declared ``layer=True`` holds layer indices, refused out
of range when the layer count is known (:func:`check_layers`: the embedded models, and a local
folder's ``config.json``; a Hub name or a wind tunnel is checked once it loads).

Example:
    >>> from dataclasses import dataclass
    >>> from bayesgeom.records import option
    >>> @dataclass
    ... class Cfg:
    ...     model: str | None = None
    ...     n_tokens: int = option(64, "frame size", needs=TEXT)
    ...     layer: int = option(-1, "the layer", layer=True)
    >>> check_model_kind(Cfg(n_tokens=8), ValueError)
    >>> check_layers(Cfg(layer=30), ValueError)  # doctest: +IGNORE_EXCEPTION_DETAIL
    Traceback (most recent call last):
    ValueError: --layer 30: layer 30 does not exist; smollm2-135m-instruct has 30 layers, ...
"""

from __future__ import annotations

import difflib
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from contextvars import ContextVar
from pathlib import Path
from typing import Any

from ...interp.layer_count import known_layer_count
from ...records.options import declared, flag_of, given_options

#: the kinds of model an option can need
TEXT, WIND_TUNNEL = "text model", "wind tunnel"

#: the model a run was handed already open (``run_detect(cfg, model=m)``), which ``cfg.model``
#: then does not describe: its kind and layer count are read from it instead
_OPENED: ContextVar[Any] = ContextVar("opened_model", default=None)


@contextmanager
def _opened(model: Any) -> Iterator[None]:
    token = _OPENED.set(model)
    try:
        yield
    finally:
        _OPENED.reset(token)


def check_with(cfg: Any, model: Any | None) -> None:
    """``cfg.check()``, where the run was handed ``model`` already open (or None): the checks
    of this module then read that model's kind and layer count, not ``cfg.model``'s."""
    if model is None:
        cfg.check()
        return
    with _opened(model):
        cfg.check()


def _kind_and_name(cfg: object) -> tuple[str, str]:
    """(kind, how a message names it) of the model the run reads."""
    m = _OPENED.get()
    if m is not None:
        windtunnel = getattr(m, "task", None) is not None \
            or getattr(getattr(m, "info", None), "source", None) == "windtunnel"
        return (WIND_TUNNEL if windtunnel else TEXT), str(getattr(m.info, "name", "the model"))
    spec = getattr(cfg, "model", None)
    return model_kind(spec), _model_name(spec)


def kind_of(cfg: object) -> str:
    """The kind of model a run of ``cfg`` reads: the model it was handed open
    (:func:`check_with`), else the one ``cfg.model`` names (:func:`model_kind`)."""
    return _kind_and_name(cfg)[0]


def model_kind(spec: object) -> str:
    """:data:`WIND_TUNNEL` for a wind-tunnel run, saved model or checkpoint folder (read from
    its records alone: :func:`windtunnel.run_identity.is_windtunnel_dir`), else :data:`TEXT`
    (the embedded models, a Hub name, another folder)."""
    if isinstance(spec, str | Path) and Path(spec).expanduser().is_dir():
        from ...windtunnel.run_identity import is_windtunnel_dir

        if is_windtunnel_dir(Path(spec).expanduser()):
            return WIND_TUNNEL
    return TEXT


def _model_name(spec: object) -> str:
    return "the default model (the embedded SmolLM2)" if spec is None else str(spec)


def check_model_kind(cfg: object, error: Callable[[str], Exception]) -> None:
    """Refuse (``error``, one line) the options given that need the kind of model ``cfg.model``
    is not: the run would ignore them."""
    wanted = [(f, opt) for f, opt in given_options(cfg) if opt.needs in (TEXT, WIND_TUNNEL)]
    if not wanted:
        return
    kind, name = _kind_and_name(cfg)
    unmet = [(f, opt) for f, opt in wanted if opt.needs != kind]
    if not unmet:
        return
    flags = ", ".join(flag_of(f, opt) for f, opt in unmet)
    need = unmet[0][1].needs
    verb = "applies" if len(unmet) == 1 else "apply"
    how = ", read on its own task" if kind == WIND_TUNNEL else ""
    raise error(f"{flags} {verb} to {need}s only; {name} is a {kind}{how}: drop "
                f"{flags}")


def check_layers(cfg: object, error: Callable[[str], Exception]) -> None:
    """Refuse (``error``, one line) a layer option out of range for ``cfg.model`` where its
    layer count is known before it loads (:func:`interp.layer_count.known_layer_count`)."""
    layer_options = [(f, opt) for f, opt in declared(cfg) if opt.layer
                     and getattr(cfg, f.name) is not None]
    if not layer_options:
        return
    m = _OPENED.get()
    known = (str(m.info.name), int(m.n_layers)) if m is not None \
        else known_layer_count(getattr(cfg, "model", None), getattr(cfg, "revision", None))
    if known is None:
        return
    name, n = known
    for f, opt in layer_options:
        value = getattr(cfg, f.name)
        for layer in value if isinstance(value, tuple | list) else (value,):
            if isinstance(layer, int) and not -n <= layer < n:
                raise error(f"{flag_of(f, opt)} {layer}: layer {layer} does not exist; {name} "
                            f"has {n} layers, valid layers are 0..{n - 1} (or -{n}..-1 from "
                            "the end)")


def check_task(cfg: object, error: Callable[[str], Exception]) -> None:
    """Refuse (``error``, one line) a ``task`` option that names no task (a typo, with the
    nearest name), or a wind tunnel's task for a text model (which runs only ``sula``), before
    the model loads (a wind tunnel's own task is compared with it once it is open)."""
    from ...windtunnel.names import TASK_NAMES, TEXT_TASK_NAMES

    task = getattr(cfg, "task", None)
    if task is None:
        return
    if task not in TASK_NAMES:
        near = difflib.get_close_matches(str(task), TASK_NAMES, n=1, cutoff=0.6)
        raise error(f"unknown task {task!r}; {f'did you mean {near[0]!r}? ' if near else ''}"
                    f"available: {', '.join(TASK_NAMES)}")
    kind, name = _kind_and_name(cfg)
    if task not in TEXT_TASK_NAMES and kind == TEXT:
        raise error(f"task {task!r} needs a wind-tunnel model trained on it; {name} is a text "
                    "model, which runs the in-context task 'sula'")
