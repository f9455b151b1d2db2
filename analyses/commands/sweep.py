"""``bayesgeom sweep``: a grid of wind-tunnel runs over seeds, aggregated (exit 1 if a cell
failed; the others still run and are aggregated). ``--config FILE`` (TOML or JSON) gives any
option by its field name; flags given on the command line override it."""

from __future__ import annotations

import argparse
import json
import tomllib
from pathlib import Path
from typing import Any

from analyses.options import CLIError, add_options, config_from_args, given_values
from records import declared, read_text

from .output import emit


def register(sub: argparse._SubParsersAction, parent: argparse.ArgumentParser) -> None:
    from analyses.sweep import SweepConfig

    p = sub.add_parser("sweep", parents=[parent],
                       help="train a grid of wind-tunnel runs (tasks x archs x presets x seeds) "
                            "and aggregate them")
    add_options(p, SweepConfig)
    p.add_argument("--config", type=Path, help="TOML or JSON file of sweep options (field "
                   "names as keys, e.g. archs = [\"transformer\", \"lstm\"]); flags override it")
    p.set_defaults(run=run)


def read_config(path: Path) -> dict[str, Any]:
    """The options in a TOML (``.toml``) or JSON file, lists as tuples."""
    from analyses.sweep import SweepConfig

    text = read_text(path, "sweep config")
    try:
        data = tomllib.loads(text) if path.suffix == ".toml" else json.loads(text)
    except (tomllib.TOMLDecodeError, json.JSONDecodeError) as e:
        raise CLIError(f"{path} is not valid {'TOML' if path.suffix == '.toml' else 'JSON'}: "
                       f"{e}") from None
    if not isinstance(data, dict):
        raise CLIError(f"{path} must hold a table of options")
    names = {f.name for f, _ in declared(SweepConfig)}
    bad = sorted(set(data) - names)
    if bad:
        raise CLIError(f"{path}: unknown option(s) {', '.join(bad)}; known: "
                       f"{', '.join(sorted(names))}")
    return {k: tuple(v) if isinstance(v, list) else v for k, v in data.items()}


def run(ns: argparse.Namespace) -> int:
    from analyses.sweep import SweepConfig, run_sweep
    from analyses.sweep_report import format_summary

    base = read_config(ns.config) if ns.config is not None else {}
    given = given_values(SweepConfig, ns)
    cfg = config_from_args(SweepConfig, ns, **{k: v for k, v in base.items() if k not in given})
    result = run_sweep(cfg)
    code = emit(result, ns, format_summary, cfg.out / "report.html")
    return 1 if result.failed else code
