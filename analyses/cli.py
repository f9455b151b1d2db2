"""The ``bayesgeom`` command line: one parser per command, each derived from its config
dataclass (:mod:`analyses.kit.options`).

A user's mistake or a fault of the machine never shows a traceback: it prints one line,
``bayesgeom: error: <what and how to fix it>``, and exits with status **2** for a usage error
(a bad option, an ``--out`` holding something else, an unknown model) or **1** for a fault (a
full disk, a read-only folder, a damaged or altered file, a diverging run, another process
holding the ``--out``); see :mod:`records.errors`. Ctrl-C exits with 130 and a closed stdout
pipe (``bayesgeom ... --json | head``) with 141, the statuses a shell gives those signals.
Anything else is a bug and keeps its traceback.

The parser lists every command by its name and help line and adds a command's options only
when that command is chosen (:class:`analyses.kit.parser.Parser`), so ``bayesgeom --help``,
``--version`` and a usage error import no torch, transformers or pandas of an experiment that
does not run (``benchmarks/cli_startup.py`` times them).

Example:
    >>> main(["windtunnel", "sample", "--V", "3", "--n", "1"])  # doctest: +ELLIPSIS
    sequence 0: 3 tokens
    ...
    0
"""

from __future__ import annotations

import argparse
import os
import sys
from collections.abc import Sequence

from ..records import exit_code, os_error_line, package_version
from .kit.options import parent_parser
from .kit.parser import CLIError, Parser

EXIT_INTERRUPTED = 130
EXIT_PIPE = 141


def build_parser() -> Parser:
    from .commands import capture, windtunnel
    from .registry import GROUPS, experiments

    p = Parser(prog="bayesgeom", description="Measure the Bayesian geometry of transformer "
               "attention: wind tunnels with exact posteriors and pretrained LLMs.")
    p.add_argument("--version", action="version",
                   version=f"%(prog)s {package_version('bayesgeom') or '0+unknown'}")
    sub = p.add_subparsers(dest="cmd", required=True, parser_class=Parser)
    parent = parent_parser()
    windtunnel.register(sub, parent)
    capture.register(sub, parent)
    groups: dict[str, argparse._SubParsersAction] = {}
    for e in experiments():
        if e.group is not None and e.group not in groups:
            g = sub.add_parser(e.group, help=GROUPS[e.group])
            groups[e.group] = g.add_subparsers(dest=f"{e.group}_cmd", required=True,
                                               parser_class=Parser)
        e.register(groups[e.group] if e.group is not None else sub, parent)
    return p


#: the errors of the tasks and of interp that are a bad input: (module under bayesgeom, name)
LIBRARY_ERRORS = (("interp.errors", "InterpError"), ("windtunnel.task", "TaskConfigError"),
                  ("windtunnel.checkpoint", "CheckpointError"),
                  ("windtunnel.posterior_prompts", "PromptSetError"))


def user_errors() -> tuple[type[BaseException], ...]:
    """The exceptions that mean a bad input or a fault of the machine, not a bug: shown as one
    line (bayesgeom's own errors derive from :class:`records.BayesgeomError`; the rest are
    the errors of the tasks and of interp, and the machine's). A library error counts once its
    module is loaded: one never imported raised nothing, and a usage error stays fast."""
    from ..records import BayesgeomError, OptionError, RunDirError

    root = __package__.rpartition(".")[0]
    loaded = (sys.modules.get(f"{root}.{module}") for module, _ in LIBRARY_ERRORS)
    library = [getattr(m, name) for m, (_, name) in zip(loaded, LIBRARY_ERRORS, strict=True)
               if m is not None]
    return (BayesgeomError, CLIError, OptionError, RunDirError, FloatingPointError, OSError,
            MemoryError, *library)


def one_line(e: BaseException) -> str:
    """The message of ``e`` on one line (what a library wrapped may span several)."""
    if isinstance(e, OSError) and e.errno is not None and e.filename is not None:
        return os_error_line(e, e.filename)
    if isinstance(e, MemoryError):
        return f"out of memory ({e or 'an allocation failed'}); lower the sizes of the run"
    return " ".join(str(e).split()) or type(e).__name__


def main(argv: Sequence[str] | None = None) -> int:
    """Run one command; return its exit status (module doc)."""
    os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")
    try:
        ns = build_parser().parse_args(argv)
        return ns.run(ns)
    except BrokenPipeError:  # the reader of stdout went away: stop quietly
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())
        return EXIT_PIPE
    except KeyboardInterrupt:
        print("bayesgeom: interrupted; rerun the same command to resume", file=sys.stderr)
        return EXIT_INTERRUPTED
    except user_errors() as e:
        print(f"bayesgeom: error: {one_line(e)}", file=sys.stderr)
        return exit_code(e)


if __name__ == "__main__":
    sys.exit(main())
