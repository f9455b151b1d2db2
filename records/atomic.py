"""Atomic file writes: a temporary sibling, fsynced, moved into place with ``os.replace``.

A killed process leaves either the old file or the new one, never a half-written one. Every
result, table, manifest and checkpoint file in bayesgeom is written through :func:`atomic_write`.

Example:
    >>> import tempfile, pathlib
    >>> d = pathlib.Path(tempfile.mkdtemp())
    >>> atomic_write_text(d / "a.txt", "hello").read_text()
    'hello'
"""

from __future__ import annotations

import contextlib
import errno
import os
import shutil
import tempfile
from collections.abc import Callable, Iterator
from pathlib import Path

from .errors import FileFault, os_error_line

_UMASK = os.umask(0)
os.umask(_UMASK)


def atomic_write(path: str | Path, write: Callable[[Path], object]) -> Path:
    """Call ``write(tmp_path)``, fsync the result, then atomically move it to ``path``
    (parents created). Returns ``path``. An OS error (disk full, read-only, a file where a
    folder should be) becomes a one-line :class:`~records.errors.FileFault` naming ``path``."""
    path = Path(path)
    with os_errors(path):
        make_dir(path.parent)
        fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".tmp", dir=path.parent)
        os.close(fd)
        try:
            write(Path(tmp))
            with open(tmp, "rb+") as f:
                os.fsync(f.fileno())
            os.chmod(tmp, 0o666 & ~_UMASK)
            os.replace(tmp, path)
        except BaseException:
            Path(tmp).unlink(missing_ok=True)
            raise
    return path


#: what torch's zip writer (``torch.save``) raises, as a ``RuntimeError``, when a write fails
TORCH_WRITE_FAILURES = ("PytorchStreamWriter failed", "unexpected pos", "file write failed")
#: below this many free bytes a failed write is taken for a full disk
FULL_BELOW = 1 << 20


def _write_failure(e: RuntimeError, path: Path) -> OSError | None:
    """The ``OSError`` a library's failed write stands for (no space where the disk holding
    ``path`` is (nearly) full, else an I/O error), or None for any other RuntimeError."""
    if not any(m in str(e) for m in TORCH_WRITE_FAILURES):
        return None
    where = next((p for p in (path, *path.parents) if p.exists()), Path("."))
    try:
        full = shutil.disk_usage(where).free < FULL_BELOW
    except OSError:
        full = False
    code = errno.ENOSPC if full else errno.EIO
    return OSError(code, os.strerror(code), str(path))


@contextlib.contextmanager
def os_errors(path: str | Path, writing: bool = True,
              fix: str = "choose another --out") -> Iterator[None]:
    """Turn an ``OSError`` raised inside the block (not already a
    :class:`~records.errors.FileFault`) into a one-line ``FileFault`` naming ``path``; when
    writing, also the ``RuntimeError`` torch raises for a failed write (a full disk inside
    ``torch.save``), so every writer ends in the same one line."""
    try:
        yield
    except FileFault:
        raise
    except OSError as e:
        raise FileFault(os_error_line(e, path, writing, fix)) from e
    except RuntimeError as e:
        os_error = _write_failure(e, Path(path)) if writing else None
        if os_error is None:
            raise
        raise FileFault(os_error_line(os_error, path, writing, fix)) from e


def make_dir(path: str | Path, fix: str = "choose another --out") -> Path:
    """Create directory ``path`` (and parents) or raise a one-line ``FileFault``."""
    path = Path(path)
    with os_errors(path, fix=fix):
        path.mkdir(parents=True, exist_ok=True)
    return path


def atomic_write_bytes(path: str | Path, data: bytes) -> Path:
    """Write ``data`` to ``path`` atomically."""
    return atomic_write(path, lambda p: p.write_bytes(data))


def atomic_write_text(path: str | Path, text: str) -> Path:
    """Write UTF-8 ``text`` to ``path`` atomically."""
    return atomic_write_bytes(path, text.encode("utf-8"))
