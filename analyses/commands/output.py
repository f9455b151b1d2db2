"""How every experiment command ends: the result as one JSON object (``--json``), or its
terminal summary and the report's path."""

from __future__ import annotations

import argparse
import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

from records import to_json


def emit(result: Any, ns: argparse.Namespace, text: Callable[[Any], str],
         report: Path | None = None) -> int:
    """Print ``result`` (exit status 0)."""
    if getattr(ns, "json", False):
        print(json.dumps(to_json(result)))
    else:
        print(text(result) + (f"\n-> {report}" if report is not None else ""))
    return 0
