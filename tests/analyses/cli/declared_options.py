"""What the command-line tests derive their cases from: each registered experiment's command
line (:func:`experiment_argv`) and every option a table of commands offers, with its type
(:func:`each_option`), so that a new command or option is covered by every such test at once."""

from __future__ import annotations

import dataclasses
import typing
from collections.abc import Iterator
from typing import Any

from bayesgeom.analyses.registry import experiments
from bayesgeom.records import declared


def experiment_argv(e: Any) -> list[str]:
    """The command line of experiment ``e`` up to its options: group, name, an ``R`` for each
    positional argument, and ``compare``'s required ``--models default``."""
    return [*([e.group] if e.group else []), e.name,
            *(["R"] * sum(1 for _, o in declared(e.config) if o.flag and o.flag[0] != "-")),
            *(["--models", "default"] if e.name == "compare" else [])]


def experiment_commands() -> dict[str, tuple[list[str], type]]:
    """``"group name"`` (or ``"name"``) -> (:func:`experiment_argv`, its config class), for
    every registered experiment."""
    return {f"{e.group} {e.name}" if e.group else e.name: (experiment_argv(e), e.config)
            for e in experiments()}


def each_option(table: dict[str, tuple[list[str], type]], with_choices: bool = True
                ) -> Iterator[tuple[str, list[str], type, dataclasses.Field, Any, Any]]:
    """(command, argv, config class, field, its :class:`records.Option`, its type) of every
    option the command line offers in ``table`` (those with declared choices left out unless
    ``with_choices``)."""
    for cmd, (argv, cls) in table.items():
        hints = typing.get_type_hints(cls)
        for f, opt in declared(cls):
            if opt.cli and (with_choices or opt.choices is None):
                yield cmd, argv, cls, f, opt, hints[f.name]
