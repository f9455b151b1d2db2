"""The ``bayesgeom`` command line, derived from configuration dataclasses.

Each option is declared once, on the config field that holds it (:func:`records.option`: help,
range, flag); :func:`add_options` turns a config class into parser arguments and
:func:`config_from_args` builds the config back from the parsed namespace, so an option is
never restated. Options every experiment shares are declared here once (``model_option`` ...),
with each config choosing its default, and the flags whose meaning never varies sit in one
parent parser (:func:`parent_parser`: ``--json``, ``--no-progress``).

Example:
    >>> import argparse
    >>> from dataclasses import dataclass
    >>> from bayesgeom.records import option
    >>> @dataclass
    ... class Cfg:
    ...     ks: tuple[int, ...] = option((0, 1), "examples per prompt")
    >>> p = argparse.ArgumentParser()
    >>> add_options(p, Cfg)
    ['ks']
    >>> config_from_args(Cfg, p.parse_args(["--ks", "0,2,4"]))
    Cfg(ks=(0, 2, 4))
"""

from __future__ import annotations

import argparse
import dataclasses
import types
import typing
from collections.abc import Callable, Iterable
from pathlib import Path
from typing import Any

from ...records import Option, check_options, declared, option
from .parser import CLIError, Parser  # noqa: F401 (their long-standing home, re-exported)


# ---------------------------------------------------------------- parsers of option strings
def comma_ints(text: str) -> tuple[int, ...]:
    try:
        return tuple(int(x) for x in text.split(","))
    except ValueError:
        raise argparse.ArgumentTypeError(
            f"expected comma-separated integers, got {text!r}") from None


def comma_floats(text: str) -> tuple[float, ...]:
    if text.strip().lower() in ("", "none"):
        return ()
    try:
        return tuple(float(x) for x in text.split(","))
    except ValueError:
        raise argparse.ArgumentTypeError(
            f"expected comma-separated numbers, got {text!r}") from None


def comma_words(text: str) -> tuple[str, ...]:
    return tuple(w.strip() for w in text.split(",") if w.strip())


def word_pair(text: str) -> tuple[str, str]:
    parts = comma_words(text)
    if len(parts) != 2:
        raise argparse.ArgumentTypeError(f"expected two words such as lug,mip, got {text!r}")
    return parts  # type: ignore[return-value]


def layer_list(text: str) -> tuple[int, ...] | None:
    """``"all"`` -> None; ``"0,5,-1"`` -> (0, 5, -1); ranges such as ``"0-3"``."""
    if text.strip() == "all":
        return None
    out: list[int] = []
    for part in text.split(","):
        part = part.strip()
        lo, sep, hi = part.partition("-") if not part.startswith("-") else (part, "", "")
        try:
            out.extend(range(int(lo), int(hi) + 1) if sep else [int(part)])
        except ValueError:
            raise argparse.ArgumentTypeError(
                f"--layers takes 'all' or comma-separated layers such as 0,5,-1 or 0-3, "
                f"not {text!r}") from None
    if not out:
        raise argparse.ArgumentTypeError(f"--layers {text!r} names no layer")
    return tuple(out)


# ---------------------------------------------------------------- shared declarations
MODEL_HELP = ("Hub name, local directory or wind-tunnel run directory (default: the embedded "
              "SmolLM2-135M; gemma3-270m: the embedded Gemma-3-270m, extra gemma)")
DTYPES = ("float32", "fp32", "bfloat16", "bf16", "float16", "fp16", "auto")


def model_option(help: str = MODEL_HELP) -> Any:
    return option(None, help)


def layers_option(what: str = "analysed layers") -> Any:
    """``--layers``: ``what``, all by default, e.g. ``0,5,-1`` or ``0-3`` (:func:`layer_list`)."""
    return option(None, f"{what}: all (default) or e.g. 0,5,-1 or 0-3", parse=layer_list,
                  layer=True)


def allow_pickle_option() -> Any:
    return option(False, "also load pickle weights (pytorch_model.bin, read with "
                  "torch.load(weights_only=True)); without it only safetensors load",
                  identity=False)


def dtype_option() -> Any:
    return option(None, "model dtype (default: the checkpoint's)", choices=DTYPES)


def batch_size_option(default: int) -> Any:
    return option(default, "prompts per forward pass", min=1, identity=False)


def out_path(text: str) -> Path:
    """An output folder from the command line; an empty one (``--out ""``, which would be the
    current folder) is refused."""
    if not text.strip():
        raise argparse.ArgumentTypeError("an empty path; give the output folder")
    return Path(text)


def out_option(default: str, help: str = "output directory") -> Any:
    return option(Path(default), help, required=True, identity=False, parse=out_path)


def progress_option() -> Any:
    """Progress bars on; the parent parser's ``--no-progress`` turns them off."""
    return option(True, "show progress bars", cli=False, identity=False)


RESTART_HELP = ("replace a finished run with other settings in --out (an unfinished one "
                "restarts in place without it; finished parts that still match are reused)")


def restart_option() -> Any:
    """Off; the parent parser's ``--restart`` turns it on."""
    return option(False, RESTART_HELP, cli=False, identity=False)


#: config fields the parent parser's flags set: field -> (namespace attribute, value when given)
PARENT_FIELDS = {"progress": ("no_progress", False), "restart": ("restart", True)}


def parent_parser() -> argparse.ArgumentParser:
    """Flags shared by every experiment command, with one meaning everywhere."""
    p = argparse.ArgumentParser(add_help=False)
    p.add_argument("--json", action="store_true", help="print the result as one JSON object")
    p.add_argument("--no-progress", action="store_true", help="no progress bars")
    p.add_argument("--restart", action="store_true", help=RESTART_HELP)
    return p


# ---------------------------------------------------------------- derivation
def _strip_optional(tp: Any) -> Any:
    if typing.get_origin(tp) in (typing.Union, types.UnionType):
        args = [a for a in typing.get_args(tp) if a is not type(None)]
        if len(args) == 1:
            return args[0]
    return tp


def _parser_for(tp: Any) -> tuple[Callable[[str], Any] | None, str | None]:
    """(type function, nargs) for an annotation."""
    tp = _strip_optional(tp)
    if typing.get_origin(tp) is tuple:
        args = typing.get_args(tp)
        if args == (str, str):
            return word_pair, None
        elem = args[0] if args else str
        if elem is int:
            return comma_ints, None
        if elem is float:
            return comma_floats, None
        return comma_words, "+"
    if tp in (int, float, str, Path):
        return tp, None
    return str, None


def add_options(parser: argparse.ArgumentParser, cls: type, skip: Iterable[str] = (),
                prefix: str = "") -> list[str]:
    """Arguments for ``cls``'s declared fields (``skip``: fields the command sets itself; each
    value lands in ``prefix + field name``); returns the field names added. Absent flags keep
    the config's defaults."""
    hints = typing.get_type_hints(cls)
    added = []
    for f, opt in declared(cls):
        if not opt.cli or f.name in skip:
            continue
        add_option(parser, f, opt, hints[f.name], prefix + f.name)
        added.append(f.name)
    return added


def _default(f: dataclasses.Field) -> Any:
    if f.default is not dataclasses.MISSING:
        return f.default
    if f.default_factory is not dataclasses.MISSING:
        return f.default_factory()
    return None


def add_option(parser: argparse.ArgumentParser, f: dataclasses.Field, opt: Option, tp: Any,
               dest: str) -> None:
    """One argument for field ``f`` (annotation ``tp``) declared by ``opt``."""
    flag = opt.flag or "--" + f.name.replace("_", "-")
    default = _default(f)
    shown = "" if default in (None, ()) or opt.required else f" (default: {_show(default)})"
    kw: dict[str, Any] = {"dest": dest, "default": argparse.SUPPRESS}
    if not flag.startswith("-"):
        kw.pop("dest")
        parser.add_argument(flag, help=opt.help, metavar=opt.metavar or flag.upper(),
                            type=opt.parse or _parser_for(tp)[0])
        return
    if _strip_optional(tp) is bool:
        if default:
            parser.add_argument(opt.negate or f"--no-{flag[2:]}", action="store_false",
                                help=negated_help(opt.help), **kw)
        else:
            parser.add_argument(flag, action="store_true", help=opt.help, **kw)
        return
    parse, nargs = _parser_for(tp)
    kw["type"] = opt.parse or parse
    if nargs and opt.parse is None:
        kw["nargs"] = nargs
    if opt.choices is not None:
        kw["choices"] = list(opt.choices)
    if opt.metavar:
        kw["metavar"] = opt.metavar
    parser.add_argument(flag, help=opt.help + shown, required=opt.required, **kw)


def negated_help(help: str) -> str:
    """The help of the ``--no-`` flag of a boolean on by default, whose own help names what it
    turns on (``"the keep-only condition"`` -> ``"skip the keep-only condition"``).

    Example:
        >>> negated_help("the norm-frozen effect (final-norm scale frozen)")
        'skip the norm-frozen effect (final-norm scale frozen)'
        >>> negated_help("Show progress bars")
        'do not show progress bars'
    """
    first, _, rest = help.partition(" ")
    if first.lower() in _VERBS:
        return f"do not {first.lower()} {rest}".rstrip()
    return f"skip {help[:1].lower()}{help[1:]}"


#: first words that make an option's help an instruction ("show progress bars"), negated with
#: "do not"; any other help names a thing the option turns on, negated with "skip"
_VERBS = frozenset({"show", "write", "print", "use", "run", "keep", "save", "check", "compute",
                    "add", "include", "fit", "train", "apply", "measure", "test", "draw",
                    "plot", "load", "read", "reuse", "resume", "verify", "stop"})


def _show(v: Any) -> str:
    if isinstance(v, tuple):
        return ",".join(map(str, v))
    return str(v)


def given_values(cls: type, ns: argparse.Namespace, prefix: str = "") -> dict[str, Any]:
    """The values of ``cls``'s fields that the command line gave (under ``prefix``)."""
    given = {f.name: getattr(ns, prefix + f.name) for f, _ in declared(cls)
             if hasattr(ns, prefix + f.name)}
    for name, value in list(given.items()):
        if isinstance(value, list):  # nargs="+" of comma lists: flatten
            given[name] = tuple(w for v in value for w in (v if isinstance(v, tuple) else (v,)))
    return given


def config_from_args(cls: type, ns: argparse.Namespace, **fixed: Any) -> Any:
    """``cls`` from the parsed namespace: given flags override the defaults; ``fixed`` (what
    the command sets itself) overrides both; the result is validated against its declarations
    (:func:`records.check_options`). The parent parser's ``--no-progress`` and
    ``--restart`` set the ``progress`` and ``restart`` fields (:data:`PARENT_FIELDS`)."""
    given = given_values(cls, ns)
    names = {f.name for f in dataclasses.fields(cls)}
    for name, (attr, value) in PARENT_FIELDS.items():
        if name in names and getattr(ns, attr, False):
            given[name] = value
    cfg = cls(**{**given, **fixed})
    check_options(cfg)  # before anything runs: the same one line as the Python API gives
    return cfg
