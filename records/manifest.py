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
