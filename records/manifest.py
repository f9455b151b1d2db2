"""Run manifests: what produced a result (versions, machine, time, command line, git commit).

Example:
    >>> m = run_manifest(seed=0)
    >>> sorted(k for k in m if k in ("command", "seed", "versions"))
    ['command', 'seed', 'versions']
"""

from __future__ import annotations

import datetime as _dt
import functools
import os
import platform
import subprocess
import sys
from collections.abc import Mapping
from importlib import metadata
from pathlib import Path
from typing import Any

#: packages whose versions every manifest records
CORE_PACKAGES = ("bayesgeom", "torch", "transformers", "numpy", "pandas", "safetensors",
                 "scikit-learn")


@functools.cache
def package_version(pkg: str) -> str | None:
    """Installed version of ``pkg`` (cached: what this process imported does not change)."""
    try:
        return metadata.version(pkg)
    except metadata.PackageNotFoundError:
        return None


@functools.cache
def git_commit() -> str | None:
    """The checkout's commit, read once per process (the code it imported does not change)."""
    here = Path(__file__).resolve().parent.parent
    try:
        out = subprocess.run(["git", "-C", str(here), "rev-parse", "HEAD"], capture_output=True,
                             text=True, timeout=5, check=False)
    except (OSError, subprocess.TimeoutExpired):
        return None
    return out.stdout.strip() or None


def run_manifest(*, packages: tuple[str, ...] = (), **extra: Any) -> dict[str, Any]:
    """Versions (:data:`CORE_PACKAGES` plus ``packages``), machine, time and command line, plus
    ``extra`` (seeds, model, dtype, the run's configuration...)."""
    torch_threads = None
    if "torch" in sys.modules:
        torch_threads = sys.modules["torch"].get_num_threads()
    return {
        "created_utc": _dt.datetime.now(_dt.UTC).isoformat(timespec="seconds"),
        "command": list(sys.argv),
        "python": platform.python_version(),
        "platform": platform.platform(),
        "cpu_count": os.cpu_count(),
        "torch_threads": torch_threads,
        "versions": {p: package_version(p) for p in (*CORE_PACKAGES, *packages)},
        "git_commit": git_commit(),
        **extra,
    }


#: the variable that picks the GPUs a process sees (CUDA's own)
VISIBLE_DEVICES = "CUDA_VISIBLE_DEVICES"


def visible_devices(environ: Mapping[str, str] = os.environ) -> list[str] | None:
    """The entries of ``CUDA_VISIBLE_DEVICES`` (GPU indices, UUIDs or MIG names); None when
    it is not set.

    Example:
        >>> visible_devices({"CUDA_VISIBLE_DEVICES": "2, 5"}), visible_devices({})
        (['2', '5'], None)
    """
    text = environ.get(VISIBLE_DEVICES)
    return None if text is None else [v.strip() for v in text.split(",") if v.strip()]


def physical_device(device: str | None, environ: Mapping[str, str] = os.environ) -> str:
    """The device a process runs on as the machine names it, what a run records: torch's
    ``cuda:k`` is the *k*-th entry of ``CUDA_VISIBLE_DEVICES`` (``cuda:3``, or a GPU's UUID as
    given there); ``cuda`` is ``cuda:0``; anything else (``cpu``, None: cpu) as it is.

    Example:
        >>> physical_device("cuda:0", {"CUDA_VISIBLE_DEVICES": "3"}), physical_device(None, {})
        ('cuda:3', 'cpu')
    """
    dev = (device or "cpu").strip()
    dev = "cuda:0" if dev == "cuda" else dev
    index = dev.removeprefix("cuda:")
    seen = visible_devices(environ)
    if dev.startswith("cuda:") and index.isdigit() and seen and int(index) < len(seen):
        entry = seen[int(index)]
        return f"cuda:{entry}" if entry.isdigit() else entry
    return dev
