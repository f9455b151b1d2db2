"""Which device each worker of a sweep trains on: one slot per device, worker *i* pinned to
slot *i*, one cell per slot at a time. Torch-free (the sweep's ``check()`` reads it).

A slot is named as torch names devices in the sweep's own process (``cuda:1``: the second GPU
this process sees) or ``cpu``. A worker pinned to ``cuda:k`` is given
``CUDA_VISIBLE_DEVICES`` = the *k*-th GPU the sweep sees (the *k*-th entry of the sweep's own
``CUDA_VISIBLE_DEVICES``, else ``k``) before anything in it touches CUDA, and trains on
``cuda:0``: it sees one GPU, so nothing in it (a library's ``.cuda()``, a context made on the
first GPU) can land on another worker's. ``cpu`` slots set nothing: ``--devices cpu,cpu`` is
two CPU workers, each named as a slot (what the tests run on a machine without GPUs).

Example:
    >>> [s.physical for s in slots(("cuda:0", "cuda:1"), {"CUDA_VISIBLE_DEVICES": "2,5"})]
    ['cuda:2', 'cuda:5']
    >>> s = slots(("1",), {})[0]
    >>> s.device, s.visible, s.train_device
    ('cuda:1', '1', 'cuda:0')
    >>> default_devices(None, "cuda", {"CUDA_VISIBLE_DEVICES": "0,1"})
    ('cuda:0', 'cuda:1')
"""

from __future__ import annotations

import os
from collections.abc import Mapping, MutableMapping
from dataclasses import dataclass

from ...records.manifest import VISIBLE_DEVICES, visible_devices
from ..kit.devices import normal


def default_devices(devices: tuple[str, ...] | None, device: str | None,
                    environ: Mapping[str, str]) -> tuple[str, ...] | None:
    """The devices the sweep's workers are pinned to: ``devices`` (``--devices``) normalised;
    else, for ``--device cuda``, one per GPU of ``CUDA_VISIBLE_DEVICES`` where it is set (else
    ``cuda:0``); else a GPU ``--device`` (``cuda:1``) alone; else None: the workers are not
    pinned (the CPU, or another kind of device), as many as ``--workers``."""
    if devices is not None:
        return tuple(normal(d) or d for d in devices)
    name = (device or "").strip()
    if name == "cuda":
        seen = visible_devices(environ)
        return tuple(f"cuda:{k}" for k in range(len(seen))) if seen else ("cuda:0",)
    gpu = normal(name) if name.startswith("cuda:") else None
    return (gpu,) if gpu is not None else None


@dataclass(frozen=True)
class Slot:
    """Worker ``index``'s device: ``device`` as the sweep names it (``cuda:1``, ``cpu``) and
    ``visible``, the ``CUDA_VISIBLE_DEVICES`` its worker is given (None for ``cpu``)."""

    index: int
    device: str
    visible: str | None = None

    @property
    def train_device(self) -> str:
        """What the pinned worker trains on: ``cuda:0`` (its one visible GPU) or ``cpu``."""
        return "cpu" if self.visible is None else "cuda:0"

    @property
    def physical(self) -> str:
        """The device as the machine names it: ``cuda:5`` (a GPU index) or the GPU's UUID or
        MIG name as ``CUDA_VISIBLE_DEVICES`` gave it; ``cpu``."""
        if self.visible is None:
            return "cpu"
        return f"cuda:{self.visible}" if self.visible.isdigit() else self.visible

    def pin(self, environ: MutableMapping[str, str] = os.environ) -> None:
        """Make this process see only this slot's GPU (before anything touches CUDA)."""
        if self.visible is not None:
            environ[VISIBLE_DEVICES] = self.visible


def slots(devices: tuple[str, ...], environ: Mapping[str, str]) -> list[Slot]:
    """A :class:`Slot` per device (normalised first), each GPU mapped through the sweep's own
    ``CUDA_VISIBLE_DEVICES`` in ``environ``."""
    seen = visible_devices(environ)
    out = []
    for i, name in enumerate(devices):
        dev = normal(name) or name
        if dev == "cpu":
            out.append(Slot(i, dev))
            continue
        k = int(dev.removeprefix("cuda:"))
        out.append(Slot(i, dev, seen[k] if seen is not None and k < len(seen) else str(k)))
    return out

