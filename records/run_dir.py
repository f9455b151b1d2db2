"""One run per output directory, one writer at a time.

:func:`hold` takes an OS-level lock on ``<out>/.bayesgeom.lock`` (``filelock``: ``flock`` on
POSIX, ``msvcrt`` on Windows; the OS drops it when the process dies, even by ``kill -9``), so a
second process pointed at the same folder gets a one-line :class:`RunBusyError` at once instead
of racing the first. :class:`RunDir` adds the claim: ``<out>/run.json`` names the command
(``experiment``) and a fingerprint of every setting that determines its results, so

* an empty or new folder is claimed; a folder holding other files or another command's run is
  refused (:class:`RunDirError`);
* the same command with the same settings resumes or reuses what is there (spelling out a
  default is the same run: the fingerprint is of the full configuration, not of the flags);
* other settings restart the run in place when it did not finish (a crash leaves
  ``status: running`` and, the lock being free, nobody is running it), and are refused for a
  finished run unless ``restart=True`` (``--restart``) says to replace it (``restart`` also
  starts the same settings over, e.g. after a damaged file). A restart keeps the
  finished parts (:class:`records.Parts`; they are re-verified by fingerprint and checksum
  before any reuse) and nested runs (each checked by its own claim) and deletes every other
  file.

Example:
    >>> import tempfile, pathlib
    >>> out = pathlib.Path(tempfile.mkdtemp()) / "run"
    >>> with RunDir(out, "geometry", {"layers": [0, 1]}) as rd:
    ...     rd.finish()
    >>> with RunDir(out, "geometry", {"layers": [0, 1]}) as rd:  # the same run: reused
    ...     rd.previous["status"]
    'done'
    >>> RunDir(out, "steer", {}).__enter__()  # doctest: +IGNORE_EXCEPTION_DETAIL
    Traceback (most recent call last):
    records.run_dir.RunDirError: .../run holds a bayesgeom geometry run; choose another --out
"""

from __future__ import annotations

import contextlib
import os
import shutil
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import filelock

from .atomic import make_dir, os_errors
from .errors import FaultError, FileFault, UsageError, file_in_the_way, os_error_line
from .files import json_safe, read_json, write_json
from .links import broken_link
from .reuse import MARKER, fingerprint

LOCK = ".bayesgeom.lock"
OWNER = ".bayesgeom.owner.json"
RECORD = "run.json"


class RunBusyError(FaultError):
    """Another process is writing the same output directory."""


class RunDirError(UsageError):
    """The output directory holds something else (other files, another run)."""


def _owner(out: Path) -> str:
    try:
        o = read_json(out / OWNER, expect=dict)
    except FileFault:
        return "another process"
    since = time.strftime("%H:%M:%S", time.localtime(o.get("since", 0)))
    return f"process {o.get('pid')} (since {since}: {' '.join(o.get('argv', []))[:80]})"


@contextlib.contextmanager
def hold(out: str | Path) -> Iterator[Path]:
    """Hold ``out`` (created if needed) as its only writer for the block; raise
    :class:`RunBusyError` at once if another process holds it. A block refused with a usage
    error (the folder holds something else) leaves no trace: the lock file, and the folder
    when this call created it, are removed."""
    out = Path(out)
    blocker = file_in_the_way(out)
    if blocker is not None:
        raise RunDirError(f"{blocker} is a file, not a directory; choose another --out")
    created = not out.exists()
    out = make_dir(out)
    had_lock = (out / LOCK).exists()
    lock = filelock.FileLock(str(out / LOCK), timeout=0, is_singleton=False)
    try:
        lock.acquire()
    except filelock.Timeout:  # (a TimeoutError, so an OSError: caught first)
        raise RunBusyError(f"{out} is in use by {_owner(out)}; wait for it to finish or "
                           "choose another --out") from None
    except OSError as e:
        raise FileFault(os_error_line(e, out / LOCK)) from e
    refused = False
    try:
        write_json(out / OWNER, {"pid": os.getpid(), "since": time.time(),
                                 "argv": list(sys.argv)})
        yield out
    except UsageError:
        refused = True
        raise
    finally:
        (out / OWNER).unlink(missing_ok=True)
        if refused and not had_lock:
            (out / LOCK).unlink(missing_ok=True)
        lock.release()
        if refused and created:
            with contextlib.suppress(OSError):
                out.rmdir()  # only if empty


#: what every run record holds (:meth:`RunDir._write`); one that names its experiment but
#: lacks another of these is damaged
RECORD_KEYS = ("experiment", "fingerprint", "status", "settings")


def _visible(out: Path) -> list[Path]:
    return sorted(p for p in out.iterdir() if p.name not in (LOCK, OWNER))


def check_out(out: str | Path, experiment: str, formerly: tuple[str, ...] = (),
              ) -> dict[str, Any] | None:
    """Whether ``out`` can hold a run of ``experiment``, read without taking it (cheap: call it
    before any expensive work): its run record (``run.json``) where it holds one of this
    experiment (or of one of the names it had ``formerly``, before a rename: such a folder is
    read as this experiment's), None where it is new or empty; else a one-line
    :class:`RunDirError` (a file, a folder of other files, or another experiment's run)."""
    out = Path(out)
    link = broken_link(out)
    if link is not None:
        raise RunDirError(f"{link}; remove the link or choose another --out")
    if out.exists() and not out.is_dir():
        raise RunDirError(f"{out} is a file, not a directory; choose another --out")
    path = out / RECORD
    if not path.exists():
        others = _visible(out) if out.is_dir() else []
        if others:
            names = ", ".join(p.name for p in others[:3])
            raise RunDirError(f"{out} holds files that are not a bayesgeom run "
                              f"({names}{' ...' if len(others) > 3 else ''}); choose an "
                              "empty or new --out")
        return None
    fix = f"delete {out} (or choose another --out) and run again"
    rec = read_json(path, expect=dict, fix=fix)
    missing = [k for k in RECORD_KEYS if k not in rec]
    kind = rec.get("experiment")
    if not rec:
        raise FileFault(f"{path} is damaged: it holds an empty record; {fix}")
    if kind is None:  # records of before the experiment key hold other keys (config, task)
        raise RunDirError(f"{path} was written by an older bayesgeom (it names no "
                          "command); choose another --out")
    if missing or not isinstance(rec["settings"], dict) or not isinstance(kind, str):
        raise FileFault(f"{path} is damaged: "
                        + (f"it lacks {', '.join(missing)}" if missing else
                           "its experiment or settings are not what bayesgeom writes")
                        + f"; {fix}")
    if kind != experiment and kind not in formerly:
        raise RunDirError(f"{out} holds a bayesgeom {kind} run; choose another --out")
    return rec


def _flat(d: dict[str, Any], prefix: str = "") -> dict[str, Any]:
    out: dict[str, Any] = {}
    for k, v in d.items():
        if isinstance(v, dict) and v:
            out.update(_flat(v, f"{prefix}{k}."))
        else:
            out[f"{prefix}{k}"] = v
    return out


def settings_diff(old: dict[str, Any], new: dict[str, Any], most: int = 3) -> str:
    """``"lr 0.003 -> 0.01, geometry.seed 0 -> 1"``: the first ``most`` settings that differ
    (nested settings by dotted name)."""
    old, new = _flat(json_safe(old)), _flat(json_safe(new))
    keys = [k for k in sorted(set(old) | set(new)) if old.get(k) != new.get(k)]
    shown = [f"{k} {old.get(k)!r} -> {new.get(k)!r}" for k in keys[:most]]
    return ", ".join(shown) + (f" and {len(keys) - most} more" if len(keys) > most else "")


def clear_keeping_parts(out: Path) -> None:
    """Delete everything under ``out`` except finished parts (``*.done.json`` markers and the
    files they list), nested runs (sub-folders with their own ``run.json``, which their own
    claims check) and the lock."""
    nested = {p.parent for p in out.rglob(RECORD) if p.parent != out}
    keep: set[Path] = set()
    for marker in out.rglob(f"*.{MARKER}"):
        keep.add(marker)
        with contextlib.suppress(FileFault):
            for f in read_json(marker, expect=dict).get("files", {}).values():
                keep.add(marker.parent / f["path"])
    keep_dirs = {p for k in keep for p in k.parents}
    for p in sorted(out.rglob("*"), key=lambda q: -len(q.parts)):
        if p.parent == out and p.name in (LOCK, OWNER):
            continue
        if p in keep or p in keep_dirs or p in nested or any(n in p.parents for n in nested):
            continue
        with os_errors(p):
            if p.is_dir() and not p.is_symlink():
                shutil.rmtree(p)
            else:
                p.unlink(missing_ok=True)


def settings_fingerprint(settings: dict[str, Any]) -> str:
    """The fingerprint a run's ``run.json`` records for ``settings``."""
    return fingerprint(json_safe(settings))


def finished_with(out: str | Path, experiment: str, settings: dict[str, Any],
                  ) -> dict[str, Any] | None:
    """The record of ``out`` if it holds a finished ``experiment`` run with these
    ``settings`` (what :class:`RunDir` would reuse), else None. Reads only; takes no lock."""
    try:
        rec = read_json(Path(out) / RECORD, expect=dict)
    except FileFault:
        return None
    same = (rec.get("experiment") == experiment and rec.get("status") == "done"
            and rec.get("fingerprint") == settings_fingerprint(settings))
    return rec if same else None


class RunDir:
    """``out`` held (:func:`hold`) and claimed by ``experiment`` with ``settings`` for the
    block. ``previous``: the record found when it was the same run (resume or reuse), else
    None; ``restarted``: the settings that changed (or ``"--restart"``) when an earlier run
    was replaced -- one line on stderr says so -- else None. Call :meth:`finish` when the
    run's outputs are complete; a run that raises stays ``running`` and is resumed or
    restarted next time. ``formerly``: the names ``experiment`` had before a rename; a folder
    recorded under one is this experiment's run (a record written there takes today's name)."""

    def __init__(self, out: str | Path, experiment: str, settings: dict[str, Any], *,
                 restart: bool = False, record: dict[str, Any] | None = None,
                 formerly: tuple[str, ...] = ()):
        self.out = Path(out)
        self.experiment, self.formerly = experiment, tuple(formerly)
        self.settings = json_safe(settings)
        self.fingerprint = settings_fingerprint(self.settings)
        self.restart = restart
        self.extra = dict(record or {})
        self.previous: dict[str, Any] | None = None
        self.restarted: str | None = None
        self._hold: contextlib.AbstractContextManager | None = None

    def __enter__(self) -> RunDir:
        link = broken_link(self.out)  # before hold() makes the folder ("File exists")
        if link is not None:
            raise RunDirError(f"{link}; remove the link or choose another --out")
        self._hold = hold(self.out)
        self._hold.__enter__()
        try:
            self._claim()
        except BaseException:
            self._hold.__exit__(*sys.exc_info())
            raise
        return self

    def __exit__(self, *exc: Any) -> None:
        assert self._hold is not None
        self._hold.__exit__(*exc)

    def _claim(self) -> None:
        rec = check_out(self.out, self.experiment, self.formerly)
        if rec is None:
            self._write("running")
            return
        kind = rec["experiment"]
        same = rec.get("fingerprint") == self.fingerprint
        if same and not self.restart:
            self.previous = rec
            if rec.get("status") != "done":
                self._write("running")
            return
        diff = "--restart" if same else settings_diff(rec.get("settings", {}), self.settings)
        if rec.get("status") == "done" and not self.restart:
            raise RunDirError(f"{self.out} holds a finished {kind} run with other settings "
                              f"({diff}); choose another --out, or pass --restart to "
                              "replace it")
        self.restarted = diff
        print(f"bayesgeom: {self.out} held an earlier {kind} run; restarting it in place "
              f"({diff})", file=sys.stderr)
        clear_keeping_parts(self.out)
        self._write("running")

    def _write(self, status: str, **extra: Any) -> None:
        self.extra.update(extra)
        write_json(self.out / RECORD, {"experiment": self.experiment,
                                       "fingerprint": self.fingerprint, "status": status,
                                       "settings": self.settings, **self.extra})

    def update(self, **extra: Any) -> None:
        """Add ``extra`` to the record (still running)."""
        self._write("running", **extra)

    def finish(self, **extra: Any) -> None:
        """Mark the run finished (its outputs complete), adding ``extra`` to the record."""
        self._write("done", **extra)

    @property
    def done(self) -> bool:
        """True when this same run had already finished (its outputs can be reused)."""
        return self.previous is not None and self.previous.get("status") == "done"
