"""How ``--devices`` names a device, for every command that takes it (``sweep``'s pinned
workers, ``geometry`` and ``capture``'s shard workers): ``cpu``, ``cuda:N`` or ``N`` (a GPU's
index, read as ``cuda:N``). Torch-free: a bad name is one line before anything loads.

Example:
    >>> normal("1"), normal("cuda:1"), normal("cpu"), normal("gpu0")
    ('cuda:1', 'cuda:1', 'cpu', None)
    >>> device_problem("cuda")
    '--devices cuda: name each GPU (cuda:0,cuda:1 or 0,1)'
"""

from __future__ import annotations

import os
from collections.abc import Mapping


def normal(name: str) -> str | None:
    """``name`` as a slot's device (``"0"`` -> ``"cuda:0"``), or None if it names none."""
    name = name.strip()
    if name == "cpu":
        return name
    index = name.removeprefix("cuda:")
    return f"cuda:{index}" if index.isdigit() and index == str(int(index)) else None


def device_problem(name: str) -> str | None:
    """One line if ``name`` is no slot's device, else None."""
    if normal(name) is not None:
        return None
    if name.strip() == "cuda":
        return "--devices cuda: name each GPU (cuda:0,cuda:1 or 0,1)"
    return f"--devices {name}: give cpu, cuda:N or N (a GPU's index, e.g. 0,1)"


def worker_threads(workers: int, environ: Mapping[str, str] = os.environ) -> int:
    """Torch threads for each of ``workers`` processes sharing this machine: its cores split
    between them, and never more than ``OMP_NUM_THREADS`` where that is set (a job scheduler's
    or a test runner's share of the cores): threads beyond the cores a process may use spin
    against each other and can make training ten times slower.

    Example:
        >>> worker_threads(2, {"OMP_NUM_THREADS": "1"})
        1
    """
    threads = max(1, (os.cpu_count() or 1) // max(1, workers))
    cap = environ.get("OMP_NUM_THREADS", "").strip()
    return min(threads, int(cap)) if cap.isdigit() and int(cap) > 0 else threads
