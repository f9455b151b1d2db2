"""Handing freed heap memory back to the system during long loops of large, short-lived arrays.

glibc's allocator keeps memory a process has freed, to reuse it; in a loop that allocates and
frees arrays of tens of MiB (an edited pass's logits over a 49k vocabulary, their float64 blocks)
what it keeps can grow without bound: `bayesgeom steer` on SmolLM2 grew about 9 MiB per scored
effect (two per edited pass) and peaked at 13.9 GB, although the arrays alive stayed
under 0.8 GB. ``malloc_trim`` returns those pages: every 16 scored effects it held two minutes of
passes at a 1.95 GB peak (5.3 GB without) at the same pass rate, where a fixed 1 MiB mmap
threshold (every large array mapped and unmapped) halved the pass rate (docs/performance.md,
"Memory of long runs").

Example:
    >>> trim = HeapTrimmer(every=16)
    >>> for _ in range(40):  # a loop of large short-lived arrays
    ...     _ = bytearray(1 << 20)
    ...     _ = trim.step()  # trims after steps 16 and 32 (where the C library is glibc)
    >>> trim.steps
    40
"""

from __future__ import annotations

import ctypes
import ctypes.util
import sys
from collections.abc import Callable
from functools import cache


@cache
def _malloc_trim() -> Callable[[int], int] | None:
    """glibc's ``malloc_trim`` or None (another libc, another system)."""
    if not sys.platform.startswith("linux"):
        return None
    try:
        libc = ctypes.CDLL(ctypes.util.find_library("c") or "libc.so.6")
        fn: Callable[[int], int] = libc.malloc_trim
        return fn
    except (OSError, AttributeError):  # musl has no malloc_trim
        return None


def trim_heap() -> bool:
    """Return the freed memory glibc keeps to the system (``malloc_trim(0)``); False where the
    C library has no such call (then nothing is done)."""
    fn = _malloc_trim()
    if fn is None:
        return False
    fn(0)
    return True


class HeapTrimmer:
    """Calls :func:`trim_heap` on every ``every``-th :meth:`step` (one step per pass of a loop)."""

    def __init__(self, every: int = 16):
        if every < 1:
            raise ValueError(f"every must be at least 1, got {every}")
        self.every, self.steps = every, 0

    def step(self) -> bool:
        """Count one step; True where this one trimmed the heap."""
        self.steps += 1
        return self.steps % self.every == 0 and trim_heap()
