"""A path that is a symbolic link leading nowhere: said in one line before anything is written
(``mkdir`` on a dangling link answers "File exists", on a looping one "Too many levels of
symbolic links", neither naming the link).

Example:
    >>> import os, tempfile, pathlib
    >>> d = pathlib.Path(tempfile.mkdtemp())
    >>> os.symlink("nowhere", d / "gone")
    >>> broken_link(d / "gone").endswith("is a symbolic link to nowhere, which does not exist")
    True
    >>> broken_link(d) is None
    True
"""

from __future__ import annotations

import errno
import os
from pathlib import Path


def broken_link(path: str | Path) -> str | None:
    """What is wrong with ``path`` when it (or a folder above it) is a symbolic link that
    leads nowhere -- dangling or looping -- else None (a plain path, a working link, a path
    that does not exist yet)."""
    p = Path(path)
    try:
        p.stat()
    except FileNotFoundError:
        if p.is_symlink():
            return f"{p} is a symbolic link to {os.readlink(p)}, which does not exist"
        return None
    except OSError as e:
        if e.errno == errno.ELOOP:
            where = "is a symbolic link" if p.is_symlink() else "lies under a symbolic link"
            return f"{p} {where} that loops (it leads back to itself)"
        return None
    return None
