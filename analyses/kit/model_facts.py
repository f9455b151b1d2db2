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

from collections.abc import Callable
from pathlib import Path

from ...interp.layer_count import known_layer_count
from ...records.options import declared, flag_of, given_options

#: the kinds of model an option can need
TEXT, WIND_TUNNEL = "text model", "wind tunnel"


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
    spec = getattr(cfg, "model", None)
    kind = model_kind(spec)
    unmet = [(f, opt) for f, opt in wanted if opt.needs != kind]
    if not unmet:
        return
    flags = ", ".join(flag_of(f, opt) for f, opt in unmet)
    need = unmet[0][1].needs
    verb = "applies" if len(unmet) == 1 else "apply"
    how = ", read on its own task" if kind == WIND_TUNNEL else ""
    raise error(f"{flags} {verb} to {need}s only; {_model_name(spec)} is a {kind}{how}: drop "
                f"{flags}")


def check_layers(cfg: object, error: Callable[[str], Exception]) -> None:
    """Refuse (``error``, one line) a layer option out of range for ``cfg.model`` where its
    layer count is known before it loads (:func:`interp.layer_count.known_layer_count`)."""
    layer_options = [(f, opt) for f, opt in declared(cfg) if opt.layer
                     and getattr(cfg, f.name) is not None]
    if not layer_options:
        return
    known = known_layer_count(getattr(cfg, "model", None))
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
