"""Checksums of reused files: SHA-256 per file, recorded when written and verified on reuse.

A directory that is reused later (a checkpoint, a saved model, a cached model) gets a
``checksums.json`` written last, listing every file's size and SHA-256; :func:`verify_checksums`
re-hashes them and raises a one-line :class:`~records.errors.FileFault` naming the first file
that is missing, truncated or altered. :func:`check_safetensors` checks a safetensors file's
header against its length (a truncated copy fails) without loading it;
:func:`safetensors_shards` lists the shards a sharded model's index names.

Example:
    >>> import tempfile, pathlib
    >>> d = pathlib.Path(tempfile.mkdtemp())
    >>> _ = (d / "w.bin").write_bytes(b"weights")
    >>> _ = write_checksums(d)
    >>> verify_checksums(d)
    >>> _ = (d / "w.bin").write_bytes(b"weighs!")
    >>> verify_checksums(d)  # doctest: +IGNORE_EXCEPTION_DETAIL
    Traceback (most recent call last):
    records.errors.FileFault: .../w.bin does not match its recorded checksum (altered or damaged)
"""

from __future__ import annotations

import hashlib
import json
import struct
from collections.abc import Iterable
from pathlib import Path

from .atomic import os_errors
from .errors import FileFault
from .files import read_json, write_json

#: the index of a sharded safetensors model (``save_pretrained(max_shard_size=...)``)
SAFE_INDEX = "model.safetensors.index.json"

CHECKSUMS = "checksums.json"


def file_sha256(path: str | Path) -> str:
    """Hex SHA-256 of a file's bytes (read in 4 MiB chunks)."""
    h = hashlib.sha256()
    with os_errors(path, writing=False), Path(path).open("rb") as f:
        for chunk in iter(lambda: f.read(1 << 22), b""):
            h.update(chunk)
    return h.hexdigest()


def write_checksums(root: str | Path, files: Iterable[str | Path] | None = None) -> Path:
    """Record size and SHA-256 of ``files`` (default: every file under ``root`` except the
    record itself) in ``root/checksums.json``; returns its path."""
    root = Path(root)
    paths = sorted(p for p in root.rglob("*") if p.is_file() and p.name != CHECKSUMS) \
        if files is None else [root / f for f in files]
    rec = {str(p.relative_to(root)): {"bytes": p.stat().st_size, "sha256": file_sha256(p)}
           for p in paths}
    return write_json(root / CHECKSUMS, {"files": rec})


def has_checksums(root: str | Path) -> bool:
    """Whether ``root`` holds a checksum record (:func:`write_checksums`)."""
    return (Path(root) / CHECKSUMS).is_file()


def verify_checksums(root: str | Path, fix: str = "delete it and rerun") -> None:
    """Raise ``FileFault`` unless every file recorded in ``root/checksums.json`` is present
    with its recorded size and SHA-256 (sizes first, so truncation is found without hashing)."""
    root = Path(root)
    rec = read_json(root / CHECKSUMS, expect=dict, keys=("files",), fix=fix)
    files = rec["files"]
    for name, f in files.items():
        p = root / name
        if not p.is_file():
            raise FileFault(f"{p} is missing (listed in {root / CHECKSUMS}); {fix}")
        if p.stat().st_size != f.get("bytes"):
            raise FileFault(f"{p} has {p.stat().st_size} bytes, {f.get('bytes')} were written "
                            f"(truncated or altered); {fix}")
    for name, f in files.items():
        if file_sha256(root / name) != f.get("sha256"):
            raise FileFault(f"{root / name} does not match its recorded checksum (altered or "
                            f"damaged); {fix}")


def check_safetensors(path: str | Path, fix: str = "the file is damaged; replace it") -> None:
    """Raise ``FileFault`` unless ``path`` is a complete safetensors file: an 8-byte header
    length, a JSON header, and exactly as many data bytes as its tensors' offsets need."""
    path = Path(path)
    with os_errors(path, writing=False):
        size = path.stat().st_size
        with path.open("rb") as f:
            head = f.read(8)
            n = struct.unpack("<Q", head)[0] if len(head) == 8 else -1
            header = f.read(n) if 0 < n <= min(size - 8, 100 << 20) else b""
    try:
        meta = json.loads(header)
        end = max((int(v["data_offsets"][1]) for k, v in meta.items() if k != "__metadata__"),
                  default=0)
    except (ValueError, KeyError, TypeError, IndexError) as e:
        raise FileFault(f"{path} is not a safetensors file (unreadable header); {fix}") from e
    if size != 8 + n + end:
        raise FileFault(f"{path} has {size} bytes where its header needs {8 + n + end} "
                        f"(truncated or damaged); {fix}")


def safetensors_shards(index: str | Path, fix: str = "the file is damaged; replace it",
                       ) -> list[str]:
    """The shard file names (sorted, distinct) that a sharded model's ``index`` (its
    :data:`SAFE_INDEX`: ``{"weight_map": {tensor: shard}}``) lists. A malformed index, or a
    name that is not a plain ``*.safetensors`` file name beside the index, is a one-line
    ``FileFault`` ending in ``fix``; whether the shards exist is the caller's to check."""
    index = Path(index)
    shards = read_json(index, expect=dict, keys=("weight_map",), fix=fix)["weight_map"]
    if not isinstance(shards, dict) or not shards:
        raise FileFault(f"{index} has no weight_map table; {fix}")
    names = sorted({str(f) for f in shards.values()})
    bad = [n for n in names if not n.endswith(".safetensors") or Path(n).name != n]
    if bad:
        raise FileFault(f"{index} names {bad[0]!r}, not a safetensors file beside it; {fix}")
    return names
