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
