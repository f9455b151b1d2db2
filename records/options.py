"""Options declared once, on the configuration dataclass that uses them.

A field made with :func:`option` carries its help text, its range and, where the command line
needs it, a flag name, a parser or choices in ``metadata["option"]``. The ``bayesgeom`` command
line derives its parsers from these declarations (``analyses.kit.options``), and
:func:`check_options` validates a configuration against them, so the CLI and the Python API
give the same one-line
message for a bad value.

Example:
    >>> from dataclasses import dataclass
    >>> @dataclass
    ... class Cfg:
    ...     n: int = option(50, "prompts per k", min=1)
    >>> check_options(Cfg(n=0))  # doctest: +IGNORE_EXCEPTION_DETAIL
    Traceback (most recent call last):
    ...
    records.options.OptionError: n must be >= 1, got 0
"""

from __future__ import annotations

import dataclasses
import math
import types
import typing
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

from .budget import Cost
from .errors import UsageError


class OptionError(UsageError):
    """A configuration value outside what its option declares (a usage error, exit status 2)."""


@dataclass(frozen=True)
class Option:
    """How one configuration field appears and what it accepts.

    ``flag``: the command-line flag (default ``--field-name``; a name without dashes makes it
    positional); ``parse``: turns the command-line string into the value (default: from the
    field's type); ``choices``: allowed values; ``min`` / ``max``: inclusive bounds (each
    element of a tuple); ``above``: an exclusive lower bound (``above=0``: positive);
    ``negate``: for a boolean that defaults to True, the flag that turns it
    off; ``required``: the command line must give it; ``cli=False``: API only;
    ``identity=False``: the value does not change the results (the output folder, progress
    bars, batch sizes), so :func:`run_settings` leaves it out of the run's fingerprint;
    ``unique``: a tuple whose elements must differ (a list of runs, archs or seeds);
    ``cost``: a size-like option's floor on the seconds one unit takes on any machine
    (:class:`records.budget.Cost`): a value whose units take longer than the time limit even
    at that floor is refused (the static stage of :mod:`records.budget`);
    ``needs``: the option is read only when the config's field of that name is on (truthy:
    ``plateau_tol`` needs ``plateau_window``) or, written ``"field=value"``, holds that value
    (``slurm_partition`` needs ``"backend=submitit"``), so :func:`check_options` refuses it
    given (away from its default) while that field is off -- an option the run would ignore; a
    name that is no field (``"text model"``, ``"wind tunnel"``) is a kind of model, which the
    experiment's own check compares with its ``--model``; ``layer``: the values are layer
    indices of the model (negatives count from the end), checked against its layer count where
    that is known before the model loads."""

    help: str
    flag: str | None = None
    parse: Callable[[str], Any] | None = None
    choices: Sequence[Any] | None = None
    min: float | None = None
    max: float | None = None
    above: float | None = None
    negate: str | None = None
    required: bool = False
    cli: bool = True
    metavar: str | None = None
    identity: bool = True
    unique: bool = False
    cost: Cost | None = None
    needs: str | None = None
    layer: bool = False


def option(default: Any, help: str, *, factory: Callable[[], Any] | None = None,
           **kw: Any) -> Any:
    """A dataclass field with ``default`` (or ``factory``) and its :class:`Option`."""
    meta = {"option": Option(help=help, **kw)}
    if factory is not None:
        return dataclasses.field(default_factory=factory, metadata=meta)
    return dataclasses.field(default=default, metadata=meta)


#: the smallest seed (every seed's range is declared once, here)
SEED_MIN = 0
#: the largest seed: ``torch.manual_seed`` takes seeds below 2**64
SEED_MAX = 2**64 - 1


def seed_option(default: int = 0, help: str = "random seed", **kw: Any) -> Any:
    """A seed field: an integer in [:data:`SEED_MIN`, :data:`SEED_MAX`] (each element of a tuple
    of seeds), so every command refuses a negative or too large seed in one line."""
    return option(default, help, min=SEED_MIN, max=SEED_MAX, **kw)


def same_option(cls: type, name: str, default: Any = dataclasses.MISSING, **changes: Any) -> Any:
    """A field declared like ``cls``'s field ``name`` (its :class:`Option`, with ``changes``;
    its default unless ``default`` is given), so two configs share one declaration."""
    f = next(f for f in dataclasses.fields(cls) if f.name == name)
    opt = dataclasses.replace(f.metadata["option"], **changes)
    if default is not dataclasses.MISSING:
        return dataclasses.field(default=default, metadata={"option": opt})
    if f.default_factory is not dataclasses.MISSING:
        return dataclasses.field(default_factory=f.default_factory, metadata={"option": opt})
    return dataclasses.field(default=f.default, metadata={"option": opt})


def declared(cls_or_obj: Any) -> list[tuple[dataclasses.Field, Option]]:
    """(field, option) for every field of a dataclass declared with :func:`option`."""
    return [(f, f.metadata["option"]) for f in dataclasses.fields(cls_or_obj)
            if isinstance(f.metadata.get("option"), Option)]


def run_settings(cfg: Any) -> dict[str, Any]:
    """The fields of a config that determine its results (``identity`` options, recursing into
    nested configs), by name: what a run directory's fingerprint is taken over. Every field
    is present whether the user gave it or left its default, so spelling out a default is the
    same run."""
    out: dict[str, Any] = {}
    for f in dataclasses.fields(cfg):
        opt = f.metadata.get("option")
        if isinstance(opt, Option) and not opt.identity:
            continue
        value = getattr(cfg, f.name)
        if dataclasses.is_dataclass(value) and not isinstance(value, type):
            value = run_settings(value) if declared(value) else dataclasses.asdict(value)
        out[f.name] = value
    return out


def _values(v: Any) -> list[Any]:
    return list(v) if isinstance(v, list | tuple) else [v]


def expect_config(value: object, cls: type, where: str) -> None:
    """A one-line ``TypeError`` when ``value`` is not a ``cls``: what ``where`` takes, and, for
    a dict, how to build one from it (notebook calls such as ``bg.run_steer({...})``).

    Example:
        >>> from dataclasses import dataclass
        >>> @dataclass
        ... class DemoCfg:
        ...     n: int = 1
        >>> expect_config(DemoCfg(), DemoCfg, "run_demo")
        >>> expect_config({"n": 2}, DemoCfg, "run_demo")
        Traceback (most recent call last):
        TypeError: run_demo takes a DemoCfg, got a dict: pass DemoCfg(**that_dict)
    """
    if not isinstance(value, cls):
        how = f": pass {cls.__name__}(**that_dict)" if isinstance(value, dict) else ""
        def article(name: str) -> str:
            return f"{'an' if name[:1] in 'AEIOU' else 'a'} {name}"

        raise TypeError(f"{where} takes {article(cls.__name__)}, got "
                        f"{article(type(value).__name__)}{how}")


def check_options(cfg: Any, error: type[Exception] = OptionError) -> None:
    """Raise ``error`` (:class:`OptionError` unless an experiment names its own) with a
    one-line message naming the first field whose value breaks its declaration (its shape: a
    list or a table; its type, a choice, a bound, or a NaN/inf number; an empty list where
    leaving the option out means its default), or an option given while the field it
    ``needs`` is off (one the run would ignore)."""
    message = _violation(cfg) or _unread(cfg)
    if message is not None:
        raise error(message)


def flag_of(f: dataclasses.Field, opt: Option) -> str:
    """How a message names field ``f``: its command-line flag (``--plateau-tol``), or the field
    name for an option the command line does not offer."""
    return (opt.flag or "--" + f.name.replace("_", "-")) if opt.cli else f.name


def default_of(f: dataclasses.Field) -> Any:
    """The default value of field ``f`` (its factory called)."""
    if f.default_factory is not dataclasses.MISSING:
        return f.default_factory()
    return f.default


def given_options(cfg: Any) -> list[tuple[dataclasses.Field, Option]]:
    """The declared options of ``cfg`` whose value differs from their default (given)."""
    return [(f, opt) for f, opt in declared(cfg) if getattr(cfg, f.name) != default_of(f)]


def _shown(value: Any) -> str:
    return ",".join(map(str, value)) if isinstance(value, tuple | list) else str(value)


def _unread(cfg: Any) -> str | None:
    """The first option given while the field it ``needs`` is off: the run would ignore it."""
    fields = {f.name: (f, opt) for f, opt in declared(cfg)}
    for f, opt in given_options(cfg):
        name, _, wanted = (opt.needs or "").partition("=")
        if name not in fields:
            continue
        on = getattr(cfg, name)
        if (str(on) == wanted) if wanted else on:
            continue
        flag, need = flag_of(f, opt), flag_of(*fields[name]) + (f" {wanted}" if wanted else "")
        value = getattr(cfg, f.name)
        shown = "" if isinstance(value, bool) else f" {_shown(value)}"
        return f"{flag}{shown} is ignored without {need}: give {need} too, or drop {flag}"
    return None


def bound_text(x: float) -> str:
    """A bound as the message shows it: 2**64 - 1 as 2**64 - 1, other integers whole, floats
    short (``1e-06``)."""
    if isinstance(x, int) and x == SEED_MAX:
        return "2**64 - 1"
    return str(x) if isinstance(x, int) else f"{x:g}"


def _plain_type(tp: Any) -> Any:
    """``int`` for ``int | None``; the element type for ``tuple[int, ...]``; else ``tp``."""
    if typing.get_origin(tp) in (typing.Union, types.UnionType):
        args = [a for a in typing.get_args(tp) if a is not type(None)]
        tp = args[0] if len(args) == 1 else tp
    if typing.get_origin(tp) is tuple:
        args = [a for a in typing.get_args(tp) if a is not Ellipsis]
        if args and all(a == args[0] for a in args):
            return args[0]
    return tp


def _type_violation(name: str, tp: Any, value: Any) -> str | None:
    for v in _values(value) if typing.get_origin(tp) is not tuple else [value]:
        if tp is int and (isinstance(v, bool) or not isinstance(v, int)):
            return f"{name} must be an integer, got {v!r}"
        if tp is float and (isinstance(v, bool) or not isinstance(v, int | float)):
            return f"{name} must be a number, got {v!r}"
        if tp is str and not isinstance(v, str):
            return f"{name} must be a string, got {v!r}"
    return None


def _shape_violation(name: str, tp: Any, value: Any) -> str | None:
    """A list option given one value (``archs = "transformer"``, ``seeds = 3``) or a table
    option given anything but a table: the shape the declaration asks for, said in one line."""
    if typing.get_origin(tp) in (typing.Union, types.UnionType):
        args = [a for a in typing.get_args(tp) if a is not type(None)]
        tp = args[0] if len(args) == 1 else None
    origin = typing.get_origin(tp) or tp
    if origin in (tuple, list) and not isinstance(value, tuple | list):
        return f"{name} must be a list of values (such as [{value!r}]), got {value!r}"
    if origin is dict and not isinstance(value, dict):
        return f"{name} must be a table of names and values, got {value!r}"
    return None


def _violation(cfg: Any) -> str | None:
    try:
        hints = typing.get_type_hints(type(cfg))
    except Exception:  # an annotation that does not resolve: skip the type check
        hints = {}
    for f, opt in declared(cfg):
        value = getattr(cfg, f.name)
        if value is None:
            continue
        if isinstance(value, tuple | list) and not value and f.default is None:
            # an empty list would be read as the default: say so instead
            return (f"{flag_of(f, opt)} names nothing; leave it out for its default, or name "
                    "at least one")
        bad_shape = _shape_violation(f.name, hints.get(f.name), value)
        if bad_shape is not None:
            return bad_shape
        bad_type = _type_violation(f.name, _plain_type(hints.get(f.name)), value)
        if bad_type is not None:
            return bad_type
        if opt.choices is not None and value not in opt.choices:
            return f"{f.name} must be one of {', '.join(map(str, opt.choices))}, got {value!r}"
        if opt.unique and isinstance(value, tuple) and len(set(value)) < len(value):
            twice = sorted({str(v) for v in value if value.count(v) > 1})
            return f"{f.name} names {', '.join(twice)} more than once, got {value!r}"
        for v in _values(value):
            if isinstance(v, bool) or not isinstance(v, int | float):
                continue
            if isinstance(v, float) and not math.isfinite(v):
                return f"{f.name} must be finite, got {v}"
            if opt.above is not None and v <= opt.above:
                return f"{f.name} must be > {bound_text(opt.above)}, got {value!r}"
            if opt.min is not None and v < opt.min:
                return f"{f.name} must be >= {bound_text(opt.min)}, got {value!r}"
            if opt.max is not None and v > opt.max:
                return f"{f.name} must be <= {bound_text(opt.max)}, got {value!r}"
        if opt.cost is not None:
            too_long = opt.cost.refusal(flag_of(f, opt), value)
            if too_long is not None:
                return too_long
    return None
