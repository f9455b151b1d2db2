"""The errors a user sees as one line, and what each exit status means.

Every error that stems from a user's input or from the machine (not from a bug) derives from
:class:`BayesgeomError` and says what was wrong and how to fix it in one line. The command line
prints that line and exits with :attr:`~BayesgeomError.exit_code`: **2** for a usage error
(an option out of range, an ``--out`` holding another run, a prompt file that is not UTF-8) and
**1** for a fault (a full disk, a read-only folder, a damaged or altered file, a run diverging).
:func:`os_error_line` turns an ``OSError`` into such a line, naming the file and the fix.

Example:
    >>> import errno
    >>> print(os_error_line(OSError(errno.ENOSPC, "No space left on device"), "runs/a/w.bin"))
    no space left on the device holding runs/a/w.bin; free some space or write to another disk
    >>> exit_code(UsageError("bad")), exit_code(FileFault("damaged"))
    (2, 1)
"""

from __future__ import annotations

import errno
from pathlib import Path

EXIT_USAGE = 2
EXIT_FAULT = 1


class BayesgeomError(Exception):
    """Base of the one-line errors; ``exit_code`` is 1 (a fault) unless a subclass says 2."""

    exit_code = EXIT_FAULT


class UsageError(BayesgeomError, ValueError):
    """The user asked for something invalid: fix the command (exit status 2)."""

    exit_code = EXIT_USAGE


class FaultError(BayesgeomError, RuntimeError):
    """The machine or a file failed the run: disk, permissions, damage, divergence (status 1)."""


class FileFault(FaultError, OSError):
    """A file that cannot be read or written as expected (an OS error, a truncated, corrupt or
    altered file). It is an ``OSError``, so code that handles OS errors still handles it."""

    def __init__(self, message: str):
        super().__init__(message)
        self.message = message

    def __str__(self) -> str:
        return self.message


class InputFileError(UsageError):
    """A file the user named (prompts, a model folder) that is missing or not in the format
    the command takes."""


def exit_code(e: BaseException) -> int:
    """The exit status for ``e``: its own for a :class:`BayesgeomError`, 1 for OS, memory and
    floating-point faults, 2 for any other (usage) error."""
    if isinstance(e, BayesgeomError):
        return e.exit_code
    if isinstance(e, OSError | MemoryError | FloatingPointError):
        return EXIT_FAULT
    return EXIT_USAGE


def file_in_the_way(path: Path) -> Path | None:
    """The first ancestor of ``path`` that exists and is not a directory."""
    for p in [path, *path.parents]:
        if p.exists():
            return p if not p.is_dir() else None
    return None


def os_error_line(e: OSError, path: str | Path, writing: bool = True,
                  fix: str = "choose another --out") -> str:
    """One line naming ``path``, what the OS said and the fix (``fix`` for write problems that
    another location solves)."""
    path = Path(path)
    code = e.errno
    if code in (errno.ENOSPC, errno.EDQUOT):
        return f"no space left on the device holding {path}; free some space or write to " \
               "another disk"
    if code == errno.EROFS:
        return f"cannot write {path}: the file system is read-only; {fix}"
    if code in (errno.EACCES, errno.EPERM):
        verb = "write" if writing else "read"
        return f"cannot {verb} {path}: permission denied; " + (
            fix if writing else "check the file's permissions")
    if code == errno.ENOTDIR or (code == errno.EEXIST and path.is_file()):
        blocker = file_in_the_way(path.parent if code == errno.ENOTDIR else path) or path
        return f"{blocker} is a file, not a directory; {fix}"
    if code == errno.EISDIR:
        return f"{path} is a directory; expected a file"
    if code == errno.ENOENT and not writing:
        return f"{path} does not exist"
    if code == errno.ENAMETOOLONG:
        return f"{path}: file name too long; choose a shorter path"
    reason = e.strerror or str(e)
    return f"cannot {'write' if writing else 'read'} {path}: {reason}"
