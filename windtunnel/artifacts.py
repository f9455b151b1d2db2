"""Atomic result files and run manifests.

Every file is written to a temporary sibling and moved into place with ``os.replace``, so a
killed process leaves either the old file or the new one, never a half-written one.
"""

from __future__ import annotations

import datetime as _dt
import functools
import json
import math
import os
import platform
import subprocess
import sys
from importlib import metadata
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from probes.atomic_io import atomic_write

__all__ = ["atomic_write", "json_safe", "package_version", "run_manifest", "write_json",
           "write_table", "write_text"]


def write_json(path: str | Path, obj: Any) -> Path:
    def w(p: Path) -> None:
        p.write_text(json.dumps(obj, indent=2, default=_json_default) + "\n")

    return atomic_write(path, w)


def json_safe(obj: Any) -> Any:
    """``obj`` with NaN/inf floats replaced by None (JSON has no NaN), numpy scalars as Python
    numbers, tuples as lists and dict keys as strings, recursively."""
    if isinstance(obj, dict):
        return {str(k): json_safe(v) for k, v in obj.items()}
    if isinstance(obj, list | tuple):
        return [json_safe(v) for v in obj]
    if isinstance(obj, np.integer):
        return int(obj)
    if isinstance(obj, float | np.floating):
        return float(obj) if math.isfinite(obj) else None
    return obj


def write_text(path: str | Path, text: str) -> Path:
    return atomic_write(path, lambda p: p.write_text(text))


def write_table(path: str | Path, df: pd.DataFrame) -> Path:
    """Write a DataFrame as parquet (``.parquet``) or CSV (anything else), atomically."""
    path = Path(path)
    if path.suffix == ".parquet":
        return atomic_write(path, lambda p: df.to_parquet(p, index=False))
    return atomic_write(path, lambda p: df.to_csv(p, index=False))


def _json_default(o: Any) -> Any:
    if hasattr(o, "tolist"):
        return o.tolist()
    if isinstance(o, Path):
        return str(o)
    raise TypeError(f"not JSON serialisable: {type(o).__name__}")


@functools.cache
def package_version(pkg: str) -> str | None:
    """Installed version of ``pkg`` (cached: what this process imported does not change)."""
    try:
        return metadata.version(pkg)
    except metadata.PackageNotFoundError:
        return None


@functools.cache
def _git_commit() -> str | None:
    """The checkout's commit, read once per process (the code it imported does not change)."""
    here = Path(__file__).resolve().parent.parent
    try:
        out = subprocess.run(
            ["git", "-C", str(here), "rev-parse", "HEAD"],
            capture_output=True,
            text=True,
            timeout=5,
            check=False,
        )
    except (OSError, subprocess.TimeoutExpired):
        return None
    return out.stdout.strip() or None


def run_manifest(**extra: Any) -> dict[str, Any]:
    """Versions, machine, time and command line, plus ``extra`` (seeds, model, dtype...)."""
    import torch

    return {
        "created_utc": _dt.datetime.now(_dt.UTC).isoformat(timespec="seconds"),
        "command": sys.argv,
        "python": platform.python_version(),
        "platform": platform.platform(),
        "cpu_count": os.cpu_count(),
        "torch_threads": torch.get_num_threads(),
        "versions": {
            p: package_version(p)
            for p in ("bayesgeom", "torch", "transformers", "numpy", "pandas", "safetensors")
        },
        "git_commit": _git_commit(),
        **extra,
    }
