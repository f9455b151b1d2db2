"""How every experiment command ends: run it, turn its errors into one-line CLI errors, print
the summary (``--json``: one JSON object; else a short table and the report's path)."""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path
from typing import Any


def run_and_report(run: Callable[[], dict[str, Any]], errors: tuple[type[Exception], ...],
                   as_json: bool, fmt: Callable[[dict[str, Any]], str], out: Path) -> int:
    """Call ``run``; ``errors`` become :class:`analyses.cli.CLIError` (exit status 2)."""
    from analyses.cli import CLIError

    try:
        summary = run()
    except errors as e:
        raise CLIError(str(e)) from e
    print(json.dumps(summary) if as_json else f"{fmt(summary)}\n-> {Path(out) / 'report.html'}")
    return 0
