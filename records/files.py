"""JSON, text and table files: each written atomically (see :mod:`records.atomic`) and read
through one place that turns OS and format errors into one line naming the file and the fix.

JSON has no NaN: :func:`json_safe` turns NaN/inf into ``null`` (and numpy scalars into Python
numbers), and :func:`write_json` applies it, so every summary file is strict JSON. Readers of
files bayesgeom wrote (:func:`read_json`, :func:`read_table`) raise
:class:`~records.errors.FileFault` for a missing, truncated, corrupt or wrong-shaped file;
:func:`read_text` reads a file the user wrote (UTF-8, a leading BOM dropped) and raises
:class:`~records.errors.InputFileError` for one that is not UTF-8 text.

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
from typing import TYPE_CHECKING, Any

import numpy as np

from .atomic import atomic_write, atomic_write_text, os_errors
from .errors import FileFault, InputFileError

if TYPE_CHECKING:  # pandas loads on first use: the command line parses without it
    import pandas as pd

#: what to do about a damaged file bayesgeom wrote itself
DAMAGED_FIX = "it is damaged; delete it (or the run) and rerun"


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


def read_json(path: str | Path, expect: type | None = None, keys: tuple[str, ...] = (),
              fix: str = DAMAGED_FIX) -> Any:
    """The parsed contents of a JSON file bayesgeom wrote. ``expect``: the top-level type it
    must have (``dict``, ``list``); ``keys``: entries a dict must hold. A missing, unreadable,
    corrupt or wrong-shaped file raises a one-line ``FileFault`` ending in ``fix``."""
    path = Path(path)
    with os_errors(path, writing=False):
        raw = path.read_bytes()
    try:
        obj = json.loads(raw.decode("utf-8"))
    except (UnicodeDecodeError, json.JSONDecodeError) as e:
        where = f" (line {e.lineno})" if isinstance(e, json.JSONDecodeError) else ""
        raise FileFault(f"{path} is not valid JSON{where}; {fix}") from e
    if expect is not None and not isinstance(obj, expect):
        raise FileFault(f"{path} holds a JSON {type(obj).__name__}, expected a "
                        f"{expect.__name__}; {fix}")
    missing = [k for k in keys if not isinstance(obj, dict) or k not in obj]
    if missing:
        raise FileFault(f"{path} lacks {', '.join(missing)}; {fix}")
    return obj


def read_text(path: str | Path, what: str = "file") -> str:
    """The UTF-8 text of a file the user gave (``what`` names it in errors), without a leading
    byte-order mark. Missing, a folder, unreadable or not UTF-8: a one-line
    ``InputFileError``."""
    path = Path(path)
    if path.is_dir():
        raise InputFileError(f"{what} {path} is a directory; pass a text file")
    if not path.exists():
        raise InputFileError(f"{what} {path} does not exist")
    try:
        raw = path.read_bytes()
    except OSError as e:
        raise InputFileError(f"cannot read {what} {path}: {e.strerror or e}") from e
    try:
        return raw.decode("utf-8-sig")
    except UnicodeDecodeError as e:
        line = raw[: e.start].count(b"\n") + 1
        raise InputFileError(
            f"{what} {path} is not UTF-8 text (byte 0x{raw[e.start]:02x} on line {line}); "
            "save it as UTF-8") from e


def read_table(path: str | Path, columns: tuple[str, ...] = (),
               fix: str = DAMAGED_FIX) -> pd.DataFrame:
    """A table bayesgeom wrote (parquet, or CSV for any other suffix) holding ``columns``;
    missing, truncated, corrupt or lacking a column: a one-line ``FileFault``."""
    import pandas as pd

    path = Path(path)
    with os_errors(path, writing=False):
        if not path.is_file():
            raise FileFault(f"{path} is missing; {fix}")
        try:
            df = pd.read_parquet(path) if path.suffix == ".parquet" else pd.read_csv(path)
        except OSError as e:
            if e.errno is not None:  # a real OS error: os_errors words it
                raise
            kind = "parquet" if path.suffix == ".parquet" else "CSV"
            raise FileFault(f"{path} is not a readable {kind} table; {fix}") from e
        except Exception as e:  # pyarrow / pandas parser errors have many types
            kind = "parquet" if path.suffix == ".parquet" else "CSV"
            raise FileFault(f"{path} is not a readable {kind} table "
                            f"({type(e).__name__}); {fix}") from e
    missing = [c for c in columns if c not in df.columns]
    if missing:
        raise FileFault(f"{path} lacks column(s) {', '.join(missing)}; {fix}")
    return df


def write_text(path: str | Path, text: str) -> Path:
    """Write UTF-8 ``text`` to ``path`` atomically; returns ``path``."""
    return atomic_write_text(path, text)


def write_table(path: str | Path, df: pd.DataFrame) -> Path:
    """Write a DataFrame as parquet (``.parquet``) or CSV (anything else), atomically."""
    path = Path(path)
    if path.suffix == ".parquet":
        return atomic_write(path, lambda p: df.to_parquet(p, index=False))
    return atomic_write(path, lambda p: df.to_csv(p, index=False))
