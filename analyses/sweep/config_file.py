"""``bayesgeom sweep --config FILE``: any sweep option by its field name, from TOML or JSON;
flags given on the command line override it."""

from __future__ import annotations

import argparse
import json
import tomllib
from pathlib import Path
from typing import Any

from ...records import declared, read_text
from ..kit.parser import CLIError
from .config import SweepConfig


def add_config_file(p: argparse.ArgumentParser) -> None:
    """The ``--config FILE`` flag."""
    p.add_argument("--config", type=Path, help="TOML or JSON file of sweep options (field "
                   "names as keys, e.g. archs = [\"transformer\", \"lstm\"]); flags override it")


def read_config(path: Path) -> dict[str, Any]:
    """The options in a TOML (``.toml``) or JSON file, lists as tuples."""
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


def config_file_values(ns: argparse.Namespace) -> dict[str, Any]:
    """The values of ``--config FILE`` (none without it)."""
    return read_config(ns.config) if getattr(ns, "config", None) is not None else {}
