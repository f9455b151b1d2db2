"""The machine's memory, against which a task refuses a batch too large to build."""

from __future__ import annotations

import os


def memory_limit() -> int:
    """Bytes of physical memory on this machine (16 GiB where the OS does not say): the most
    that one batch's dense arrays may need before a task refuses it."""
    try:
        return os.sysconf("SC_PHYS_PAGES") * os.sysconf("SC_PAGE_SIZE")
    except (AttributeError, ValueError, OSError):
        return 16 << 30


def format_bytes(n: float) -> str:
    """``"1.5 GiB"``: ``n`` bytes in the largest binary unit that keeps it >= 1."""
    for unit in ("B", "KiB", "MiB", "GiB", "TiB"):
        if n < 1024 or unit == "TiB":
            return f"{n:.0f} {unit}" if unit == "B" else f"{n:.1f} {unit}"
        n /= 1024
    raise AssertionError  # unreachable
