"""JSON, text and table files, each written atomically (see :mod:`records.atomic`).

JSON has no NaN: :func:`json_safe` turns NaN/inf into ``null`` (and numpy scalars into Python
numbers), and :func:`write_json` applies it, so every summary file is strict JSON.

Example:
    >>> import tempfile, pathlib, math
    >>> p = pathlib.Path(tempfile.mkdtemp()) / "s.json"
    >>> _ = write_json(p, {"mae": 0.25, "corr": math.nan})
    >>> read_json(p)
    {'mae': 0.25, 'corr': None}
"""

from __future__ import annotations

import json
import math
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from records.atomic import atomic_write, atomic_write_text


def json_safe(obj: Any) -> Any:
    """``obj`` with NaN/inf floats as None, numpy scalars and arrays as Python numbers and lists,
    tuples as lists, paths as strings and dict keys as strings, recursively."""
    if isinstance(obj, dict):
        return {str(k): json_safe(v) for k, v in obj.items()}
    if isinstance(obj, list | tuple):
        return [json_safe(v) for v in obj]
    if isinstance(obj, np.ndarray):
        return json_safe(obj.tolist())
    if isinstance(obj, bool | np.bool_):
        return bool(obj)
    if isinstance(obj, np.integer):
        return int(obj)
    if isinstance(obj, float | np.floating):
        return float(obj) if math.isfinite(obj) else None
    if isinstance(obj, Path):
        return str(obj)
    if hasattr(obj, "tolist") and not isinstance(obj, str | bytes):  # torch tensors
        return json_safe(obj.tolist())
    return obj


def write_json(path: str | Path, obj: Any) -> Path:
    """Write ``json_safe(obj)``, indented, atomically."""
    return atomic_write_text(path, json.dumps(json_safe(obj), indent=2) + "\n")


def read_json(path: str | Path) -> Any:
    """The parsed contents of a JSON file."""
    return json.loads(Path(path).read_text())


def write_text(path: str | Path, text: str) -> Path:
    return atomic_write_text(path, text)


def write_table(path: str | Path, df: pd.DataFrame) -> Path:
    """Write a DataFrame as parquet (``.parquet``) or CSV (anything else), atomically."""
    path = Path(path)
    if path.suffix == ".parquet":
        return atomic_write(path, lambda p: df.to_parquet(p, index=False))
    return atomic_write(path, lambda p: df.to_csv(p, index=False))
