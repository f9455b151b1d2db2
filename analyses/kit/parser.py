"""The parser of the ``bayesgeom`` command line: one-line usage errors, and commands whose
options are added only when that command is chosen.

Example:
    >>> p = Parser(prog="bayesgeom")
    >>> sub = p.add_subparsers(dest="cmd", parser_class=Parser)
    >>> filled = []
    >>> c = sub.add_parser("hello", help="say hello")
    >>> c.defer(lambda q: filled.append(q.add_argument("--name").dest))
    >>> filled
    []
    >>> p.parse_args(["hello", "--name", "x"]).name, filled
    ('x', ['name'])
"""

from __future__ import annotations

import argparse
import typing
from collections.abc import Callable
from typing import Any

from ...records import UsageError


class CLIError(UsageError):
    """A user-facing command-line error: printed as one line, exit status 2."""


class Parser(argparse.ArgumentParser):
    """An ``ArgumentParser`` whose usage errors become one-line :class:`CLIError` s, and whose
    arguments may come later: :meth:`defer` hands it a function that adds them the first time
    the parser is used (a command's options need its config, whose module may import torch:
    ``bayesgeom --help`` and a bad option to one command build no other command's options)."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.register("action", "parsers", Subcommands)
        self._fill: Callable[[Parser], None] | None = None

    def defer(self, fill: Callable[[Parser], None]) -> None:
        """Add the arguments with ``fill(self)`` when the parser is first used."""
        self._fill = fill

    def ready(self) -> Parser:
        """This parser with its deferred arguments added."""
        if self._fill is not None:
            fill, self._fill = self._fill, None
            fill(self)
        return self

    def parse_known_args(self, args: Any = None, namespace: Any = None) -> Any:
        return super(Parser, self.ready()).parse_known_args(args, namespace)

    def format_help(self) -> str:
        return super(Parser, self.ready()).format_help()

    def format_usage(self) -> str:
        return super(Parser, self.ready()).format_usage()

    def error(self, message: str) -> typing.NoReturn:
        raise CLIError(message if " " not in self.prog else f"{self.prog}: {message}")


class _Ready(dict):
    """Name -> parser; a parser looked up by name has its deferred arguments added."""

    def __getitem__(self, name: str) -> Any:
        parser = super().__getitem__(name)
        return parser.ready() if isinstance(parser, Parser) else parser

    def get(self, name: str, default: Any = None) -> Any:
        return self[name] if name in self else default  # noqa: SIM401 (dict.get skips [])


class Subcommands(argparse._SubParsersAction):
    """Subcommands whose parsers fill in only when chosen (or looked up): listing them for
    ``--help`` needs their names and help lines alone."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self._name_parser_map = self.choices = _Ready()
