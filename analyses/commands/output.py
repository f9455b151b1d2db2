"""What every experiment command shares: its parser derived from the config, and how it ends
(the result as one JSON object with ``--json``, or its terminal summary and the report's path)."""

from __future__ import annotations

import argparse
import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

from analyses.options import add_options, config_from_args
from records import to_json


def emit(result: Any, ns: argparse.Namespace, text: Callable[[Any], str],
         report: Path | None = None) -> int:
    """Print ``result`` (exit status 0)."""
    if getattr(ns, "json", False):
        print(json.dumps(to_json(result)))
    else:
        print(text(result) + (f"\n-> {report}" if report is not None else ""))
    return 0


def register_experiment(sub: argparse._SubParsersAction, parent: argparse.ArgumentParser,
                        name: str, help: str, config: type, run: Callable[[Any], Any],
                        summary: Callable[[Any], str]) -> None:
    """``bayesgeom <name>``: options from ``config``; runs ``run(config)``, prints ``summary``."""

    def command(ns: argparse.Namespace) -> int:
        cfg = config_from_args(config, ns)
        return emit(run(cfg), ns, summary, cfg.out / "report.html")

    p = sub.add_parser(name, parents=[parent], help=help)
    add_options(p, config)
    p.set_defaults(run=command)
