"""``check_device``: a device string checked against this torch build and machine, before any
model is moved.

``torch.device("foo")`` raises a long ``RuntimeError`` and ``model.to("cuda")`` on a CPU build
fails deep in torch; here both are one :class:`~interp.errors.InterpError` line that names the
devices this machine has.

Example:
    >>> check_device("cpu")
    device(type='cpu')
    >>> check_device("foo")  # doctest: +IGNORE_EXCEPTION_DETAIL
    Traceback (most recent call last):
    interp.errors.InterpError: unknown device 'foo'; this machine has: cpu
"""

from __future__ import annotations

from typing import Any

import torch

from .errors import InterpError

#: device_map strings that accelerate resolves itself (not device names)
DEVICE_MAP_STRATEGIES = ("auto", "balanced", "balanced_low_0", "sequential")


def _backend(kind: str) -> Any | None:
    """The torch module that reports a device kind's availability (``torch.cuda``, ...)."""
    if kind == "mps":
        return getattr(torch.backends, "mps", None)
    return getattr(torch, kind, None) if kind in ("cuda", "xpu") else None


def _count(kind: str) -> int:
    """How many devices of ``kind`` this build and machine have (cpu: 1)."""
    if kind == "cpu":
        return 1
    mod = _backend(kind)
    try:
        if mod is None or not mod.is_available():
            return 0
        return int(mod.device_count()) if hasattr(mod, "device_count") else 1
    except (RuntimeError, AssertionError):  # a build without the backend compiled in
        return 0


def available_devices() -> list[str]:
    """Every device this machine can run on: ``cpu``, then ``cuda:0..``, ``mps``, ``xpu:0..``."""
    out = ["cpu"]
    for kind in ("cuda", "xpu"):
        out += [f"{kind}:{i}" for i in range(_count(kind))]
    if _count("mps"):
        out.append("mps")
    return out


def check_device(device: str | torch.device) -> torch.device:
    """``device`` as a ``torch.device`` that exists here (``"cuda"``: the current CUDA device).

    Raises :class:`InterpError` (one line, naming the available devices) for a string torch
    cannot parse, a device kind this build or machine lacks (``"cuda"`` on a CPU build,
    ``"mps"`` off Apple silicon, ``"meta"``), or an index beyond the device count.
    """
    have = ", ".join(available_devices())
    if isinstance(device, torch.device):
        d = device
    elif isinstance(device, str):
        try:
            d = torch.device(device.strip())
        except RuntimeError:
            raise InterpError(f"unknown device {device!r}; this machine has: {have}") from None
    else:
        raise InterpError(f"device must be a string such as 'cpu' or 'cuda:0', got "
                          f"{type(device).__name__}; this machine has: {have}")
    if d.type not in ("cpu", "cuda", "mps", "xpu"):
        raise InterpError(f"device {str(d)!r} cannot run a model here; this machine has: {have}")
    n = _count(d.type)
    if n == 0:
        why = {"cuda": "this torch build or machine has no CUDA GPU",
               "mps": "this machine has no Apple MPS device",
               "xpu": "this torch build or machine has no Intel XPU"}[d.type]
        raise InterpError(f"device {str(d)!r} is not available: {why}; this machine has: {have}")
    if d.index is not None and d.type != "cpu" and d.index >= n:
        raise InterpError(f"device {str(d)!r} does not exist ({n} {d.type} device"
                          f"{'s' if n > 1 else ''}); this machine has: {have}")
    if d.type == "cpu" and d.index not in (None, 0):
        raise InterpError(f"device {str(d)!r} does not exist; use 'cpu'")
    return d


def check_device_map(device_map: str | dict[str, Any]) -> str | dict[str, Any]:
    """``device_map`` with every device it names checked (strategies such as ``"auto"`` and
    the ``"disk"`` offload target pass as they are)."""
    if isinstance(device_map, str):
        if device_map not in DEVICE_MAP_STRATEGIES:
            check_device(device_map)
        return device_map
    if not isinstance(device_map, dict):
        raise InterpError(f"device_map must be a strategy ({', '.join(DEVICE_MAP_STRATEGIES)}) "
                          f"or a dict of module -> device, got {type(device_map).__name__}")
    for target in device_map.values():
        if isinstance(target, int) and not isinstance(target, bool):
            check_device(f"cuda:{target}")
        elif target != "disk":
            check_device(target)
    return device_map
