"""The ``bayesgeom`` command line: one parser per command, each derived from its config
dataclass (:mod:`analyses.options`); user errors print one line and exit with status 2.

Example:
    >>> main(["windtunnel", "sample", "--V", "3", "--n", "1"])  # doctest: +ELLIPSIS
    sequence 0: 3 tokens
    ...
    0
"""

from __future__ import annotations

import os
import sys
from collections.abc import Sequence

from analyses.options import CLIError, Parser, parent_parser

EXIT_USAGE = 2


def build_parser() -> Parser:
    from analyses.commands import capture, compare, demo, geometry, steer, sula, windtunnel

    p = Parser(prog="bayesgeom", description="Measure the Bayesian geometry of transformer "
               "attention: wind tunnels with exact posteriors and pretrained LLMs.")
    sub = p.add_subparsers(dest="cmd", required=True, parser_class=Parser)
    parent = parent_parser()
    for command in (demo, windtunnel, capture, geometry, compare, sula, steer):
        command.register(sub, parent)
    return p


def user_errors() -> tuple[type[BaseException], ...]:
    """The exceptions that mean a bad input, not a bug: shown as one line."""
    from analyses.compare import CompareError
    from analyses.geometry_pool import GeometryError
    from analyses.prompt_pool import PoolError
    from analyses.steering import SteerError
    from interp import InterpError
    from records import OptionError
    from windtunnel import PromptSetError, RunDirError, TaskConfigError
    from windtunnel.checkpoint import CheckpointError

    return (CLIError, OptionError, TaskConfigError, RunDirError, CheckpointError,
            FloatingPointError, InterpError, GeometryError, PoolError, SteerError, CompareError,
            PromptSetError)


def main(argv: Sequence[str] | None = None) -> int:
    os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")
    try:
        ns = build_parser().parse_args(argv)
        return ns.run(ns)
    except user_errors() as e:
        print(f"bayesgeom: error: {e}", file=sys.stderr)
        return EXIT_USAGE


if __name__ == "__main__":
    sys.exit(main())
