"""An experiment as the command line and the notebook façade see it, and how it becomes a
``bayesgeom`` command.

Each experiment folder of :mod:`analyses` exports ``EXPERIMENTS``, a tuple of
:class:`Experiment`; :mod:`analyses.registry` lists the folders and the command line registers
every entry (options derived from the config, :mod:`analyses.kit.options`), so a new
experiment needs no edit to ``cli.py``. A command parses its options into the config, runs
``run(config)`` and prints ``summary(result)`` and the report's path, or the result as one JSON
object with ``--json``. The config, run and summary of an entry may be :class:`Later`
references, imported when the command is chosen: listing the commands (``bayesgeom --help``)
imports no experiment's torch-importing modules. A config lives in a light module (its
experiment's ``config.py``: no torch, transformers, pandas, scipy or plotly) and its ``check()``
runs before ``run`` is imported, so a bad option or ``--out`` is refused at once, with nothing
loaded.

Example:
    >>> import argparse
    >>> from dataclasses import dataclass
    >>> from bayesgeom.analyses.kit import RunOptions
    >>> from bayesgeom.analyses.kit.options import parent_parser
    >>> from bayesgeom.analyses.kit.parser import Parser
    >>> @dataclass
    ... class ToyConfig(RunOptions, experiment="toy"):
    ...     pass
    >>> toy = Experiment("toy", "a toy", ToyConfig, lambda cfg: 42, lambda r: f"answer {r}")
    >>> Later("json", "dumps")([1])  # a function imported on its first call
    '[1]'
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
import importlib
import json
from collections.abc import Callable, Mapping
from typing import Any

from ...records import to_json
from ...records.lazy import exports
from .errors import ExperimentError
from .options import add_options, config_from_args, given_values
from .parser import Parser


class Later:
    """``module.name``, imported on first use: called, it calls that function; :func:`resolve`
    gives the object itself (a config class). An experiment's run, summary and config modules
    import torch, so the command line names them and imports only the chosen command's."""

    def __init__(self, module: str, name: str) -> None:
        self.module, self.name = module, name

    def get(self) -> Any:
        return getattr(importlib.import_module(self.module), self.name)

    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        return self.get()(*args, **kwargs)

    def __repr__(self) -> str:
        return f"Later({self.module!r}, {self.name!r})"


def resolve(obj: Any) -> Any:
    """``obj``, or what it refers to when it is a :class:`Later`."""
    return obj.get() if isinstance(obj, Later) else obj


class Experiment:
    """One experiment command: ``name`` (command name), ``help`` (one line), ``config`` (its
    config dataclass), ``run`` (config -> typed result), ``summary`` (result -> terminal text);
    each of config, run, summary, ``arguments`` and ``prepare`` may be a :class:`Later`.

    ``group``: registered as ``bayesgeom <group> <name>``; ``nested``: field -> (config class,
    fields the command sets itself) for a config that holds another (``compare`` holds a
    geometry config), whose options join the command's; ``prepare``: an extra step over the
    parsed options (``--config FILE`` for ``sweep``) returning given values, with ``arguments``
    adding its flags; ``failed``: result -> True when the command should exit 1."""

    def __init__(self, name: str, help: str, config: type | Later, run: Callable[[Any], Any],
                 summary: Callable[[Any], str], group: str | None = None,
                 nested: Mapping[str, tuple[type | Later, tuple[str, ...]]] | None = None,
                 arguments: Callable[[argparse.ArgumentParser], None] | None = None,
                 prepare: Callable[[argparse.Namespace], dict[str, Any]] | None = None,
                 failed: Callable[[Any], bool] | None = None) -> None:
        self.name, self.help, self.group = name, help, group
        self._config, self._nested = config, dict(nested or {})
        self.run, self.summary, self.failed = run, summary, failed
        self.arguments, self.prepare = arguments, prepare

    @classmethod
    def in_package(cls, package: str, name: str, help: str, config: str | None = None,
                   run: str | None = None,
                   modules: tuple[str, str, str] = ("config", "run", "report"),
                   **kw: Any) -> Experiment:
        """The usual layout of an experiment folder ``package`` (its ``__name__``): the config
        class ``config`` in its ``config`` module, the function ``run`` in ``run`` and
        ``format_summary`` in ``report`` (``modules`` names others), each imported when the
        command is chosen; ``kw`` as for the constructor. ``config`` and ``run`` default to what
        the package exports (:func:`records.lazy.exports`) from those modules: its one
        ``*Config`` class and its one ``run_*`` function."""
        cmod, rmod, smod = (f"{package}.{m}" for m in modules)
        listed = exports(package)

        def one(module: str, fits: Callable[[str], bool]) -> str:
            found = [n for n, (m, _) in listed.items() if m == f".{module}" and fits(n)]
            if len(found) != 1:
                raise TypeError(f"{package}: name the {module} of experiment {name!r} "
                                f"(its package exports {found or 'none'} from .{module})")
            return found[0]

        config = config or one(modules[0], lambda n: n.endswith("Config"))
        run = run or one(modules[1], lambda n: n.startswith("run_"))
        return cls(name, help, config=Later(cmod, config), run=Later(rmod, run),
                   summary=Later(smod, "format_summary"), **kw)

    def __repr__(self) -> str:
        return f"Experiment({self.name!r}, group={self.group!r})"

    @property
    def config(self) -> type:
        """The config dataclass (imported on first use)."""
        return resolve(self._config)

    @property
    def nested(self) -> dict[str, tuple[type, tuple[str, ...]]]:
        """Field -> (nested config class, the fields the command sets itself)."""
        return {k: (resolve(cls), skip) for k, (cls, skip) in self._nested.items()}

    def register(self, sub: argparse._SubParsersAction,
                 parent: argparse.ArgumentParser) -> None:
        """Add ``bayesgeom <name>`` to ``sub`` (the flags of ``parent`` included); its options
        are added when it is chosen (:meth:`analyses.kit.parser.Parser.defer`)."""
        p = sub.add_parser(self.name, parents=[parent], help=self.help)
        p.set_defaults(run=self.command)
        if isinstance(p, Parser):
            p.defer(self.add_arguments)
        else:
            self.add_arguments(p)

    def add_arguments(self, p: argparse.ArgumentParser) -> None:
        """The command's options: its config's, its nested configs' and ``arguments``'."""
        add_options(p, self.config)
        for cls, skip in self.nested.values():
            add_options(p, cls, skip=skip)
        if self.arguments is not None:
            self.arguments(p)

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
            check = getattr(cfg, "check", None)
            if check is not None:
                check()  # every option and the --out, before the run module (torch) is imported
            result = self.run(cfg)
        except ExperimentError as e:
            e.experiment = e.experiment or self.name
            raise
        if getattr(ns, "json", False):
            print(json.dumps(to_json(result)))
        else:
            print(f"{self.summary(result)}\n-> {cfg.out / 'report.html'}")
        return 1 if self.failed is not None and self.failed(result) else 0
