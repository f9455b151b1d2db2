"""An experiment as the command line and the notebook façade see it, and how it becomes a
``bayesgeom`` command.

Each experiment folder of :mod:`analyses` exports ``EXPERIMENTS``, a tuple of
:class:`Experiment`; :mod:`analyses.registry` lists the folders and the command line registers
every entry (options derived from the config, :mod:`analyses.kit.options`), so a new
experiment needs no edit to ``cli.py``. A command parses its options into the config, runs
``run(config)`` and prints ``summary(result)`` and the report's path, or the result as one JSON
object with ``--json``.

Example:
    >>> import argparse
    >>> from dataclasses import dataclass
    >>> from bayesgeom.analyses.kit import RunOptions
    >>> from bayesgeom.analyses.kit.options import Parser, parent_parser
    >>> @dataclass
    ... class ToyConfig(RunOptions, experiment="toy"):
    ...     pass
    >>> toy = Experiment("toy", "a toy", ToyConfig, lambda cfg: 42, lambda r: f"answer {r}")
    >>> p = Parser(prog="bayesgeom")
    >>> sub = p.add_subparsers(dest="cmd", parser_class=Parser)
    >>> toy.register(sub, parent_parser())
    >>> ns = p.parse_args(["toy", "--out", "runs/toy"])
    >>> ns.run(ns)
    answer 42
    -> runs/toy/report.html
    0
"""

from __future__ import annotations

import argparse
import json
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from ...records import to_json
from .errors import ExperimentError
from .options import add_options, config_from_args, given_values


@dataclass(frozen=True)
class Experiment:
    """One experiment command: ``name`` (command name), ``help`` (one line), ``config`` (its
    config dataclass), ``run`` (config -> typed result), ``summary`` (result -> terminal text).

    ``group``: registered as ``bayesgeom <group> <name>``; ``nested``: field -> (config class,
    fields the command sets itself) for a config that holds another (``compare`` holds a
    geometry config), whose options join the command's; ``prepare``: an extra step over the
    parsed options (``--config FILE`` for ``sweep``) returning given values, with ``arguments``
    adding its flags; ``failed``: result -> True when the command should exit 1."""

    name: str
    help: str
    config: type
    run: Callable[[Any], Any]
    summary: Callable[[Any], str]
    group: str | None = None
    nested: dict[str, tuple[type, tuple[str, ...]]] = field(default_factory=dict)
    arguments: Callable[[argparse.ArgumentParser], None] | None = None
    prepare: Callable[[argparse.Namespace], dict[str, Any]] | None = None
    failed: Callable[[Any], bool] | None = None

    def register(self, sub: argparse._SubParsersAction,
                 parent: argparse.ArgumentParser) -> None:
        """Add ``bayesgeom <name>`` to ``sub`` (the flags of ``parent`` included)."""
        p = sub.add_parser(self.name, parents=[parent], help=self.help)
        add_options(p, self.config)
        for cls, skip in self.nested.values():
            add_options(p, cls, skip=skip)
        if self.arguments is not None:
            self.arguments(p)
        p.set_defaults(run=self.command)

    def make_config(self, ns: argparse.Namespace) -> Any:
        """The config from parsed options (nested configs and ``prepare``'s values included;
        flags given on the command line win)."""
        fixed = {name: config_from_args(cls, ns) for name, (cls, _) in self.nested.items()}
        if self.prepare is not None:
            given = given_values(self.config, ns)
            fixed |= {k: v for k, v in self.prepare(ns).items() if k not in given}
        return config_from_args(self.config, ns, **fixed)

    def command(self, ns: argparse.Namespace) -> int:
        """Run the command for parsed options ``ns``; return the exit status."""
        try:
            cfg = self.make_config(ns)
            result = self.run(cfg)
        except ExperimentError as e:
            e.experiment = e.experiment or self.name
            raise
        if getattr(ns, "json", False):
            print(json.dumps(to_json(result)))
        else:
            print(f"{self.summary(result)}\n-> {cfg.out / 'report.html'}")
        return 1 if self.failed is not None and self.failed(result) else 0
