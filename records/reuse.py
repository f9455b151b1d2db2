"""Fingerprints and finished parts: how a run recognises work it has already done.

A *part* is a named piece of a run (a scored prompt pool, one steering condition, one SULA
condition, a whole geometry run) stored under a directory as a few files plus a marker
``<name>.done.json`` holding the part's fingerprint and the SHA-256 of each file. The marker is
written last (atomically), so a part is finished exactly when its marker exists; on reuse the
fingerprint must match and every file must still hash to its recorded value, otherwise the part
counts as not done and is rebuilt. A fingerprint is a short hash of everything that determines
the part's content (configuration, model weights digest, prompts), never of where it is written.

Example:
    >>> import tempfile, pathlib
    >>> parts = Parts(pathlib.Path(tempfile.mkdtemp()))
    >>> fp = fingerprint({"k": 8}, "weights-digest")
    >>> parts.get("cut", fp) is None
    True
    >>> parts.put("cut", fp, scores={"mae": 0.5})
    >>> parts.get("cut", fp)["scores"]
    {'mae': 0.5}
    >>> parts.get("cut", fingerprint({"k": 4}, "weights-digest")) is None
    True
"""

from __future__ import annotations

import hashlib
import io
import json
import sys
from collections.abc import Iterable
from pathlib import Path
from typing import Any

import numpy as np

from .atomic import atomic_write_bytes
from .checksums import file_sha256
from .errors import FileFault
from .files import json_safe, read_json, write_json, write_table

MARKER = "done.json"


def fingerprint(*parts: Any, length: int = 16) -> str:
    """Hex digest (``length`` characters) of JSON-serialisable ``parts`` (key order ignored)."""
    blob = json.dumps(json_safe(list(parts)), sort_keys=True, default=str)
    return hashlib.sha256(blob.encode()).hexdigest()[:length]


def _write(stem: Path, obj: Any) -> Path:
    """Write ``obj`` to ``stem`` plus the extension its type takes."""
    pd = sys.modules.get("pandas")  # a DataFrame means pandas is loaded; else never load it
    if pd is not None and isinstance(obj, pd.DataFrame):
        return write_table(stem.parent / f"{stem.name}.parquet", obj)
    if isinstance(obj, np.ndarray):
        buf = io.BytesIO()
        np.save(buf, obj, allow_pickle=False)
        return atomic_write_bytes(stem.parent / f"{stem.name}.npy", buf.getvalue())
    return write_json(stem.parent / f"{stem.name}.json", obj)


def _read(path: Path) -> Any:
    if path.suffix == ".parquet":
        import pandas as pd

        return pd.read_parquet(path)
    if path.suffix == ".npy":
        return np.load(path, allow_pickle=False)
    if path.suffix == ".json":
        return read_json(path)
    return path


class Parts:
    """The finished parts of one run, kept under ``root``."""

    def __init__(self, root: str | Path):
        self.root = Path(root)

    def _marker(self, name: str) -> Path:
        return self.root / f"{name}.{MARKER}"

    def get(self, name: str, fp: str) -> dict[str, Any] | None:
        """The part's contents (DataFrames, arrays, JSON values, or paths of marked files) if
        it finished with fingerprint ``fp`` and no file changed since; else None."""
        marker = self._marker(name)
        if not marker.exists():
            return None
        try:
            rec = read_json(marker, expect=dict)
        except FileFault:
            return None
        if not isinstance(rec, dict) or rec.get("fingerprint") != fp:
            return None
        out: dict[str, Any] = {}
        for key, f in rec.get("files", {}).items():
            path = self.root / f["path"]
            if not path.is_file() or file_sha256(path) != f["sha256"]:
                return None
            out[key] = _read(path)
        return out

    def put(self, name: str, fp: str, **payload: Any) -> None:
        """Write each payload item (DataFrame -> parquet, ndarray -> npy, else JSON) as
        ``<name>.<key>.<ext>``, then the marker."""
        paths = {key: _write(self.root / f"{name}.{key}", obj) for key, obj in payload.items()}
        self._mark(name, fp, paths)

    def mark(self, name: str, fp: str, files: Iterable[str | Path]) -> None:
        """Record files a run wrote itself (paths under ``root``) as the finished part ``name``;
        :meth:`get` then returns them keyed by file name."""
        self._mark(name, fp, {Path(f).name: self.root / f for f in files})

    def _mark(self, name: str, fp: str, paths: dict[str, Path]) -> None:
        files = {key: {"path": str(p.relative_to(self.root)), "sha256": file_sha256(p)}
                 for key, p in paths.items()}
        write_json(self._marker(name), {"fingerprint": fp, "files": files})
