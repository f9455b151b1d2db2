import sys

import numpy as np
import pytest

from bayesgeom.records import heap
from bayesgeom.records.heap import HeapTrimmer, trim_heap

glibc = pytest.mark.skipif(heap._malloc_trim() is None, reason="the C library is not glibc")


def _resident_mib() -> float:
    with open("/proc/self/statm") as f:
        return int(f.read().split()[1]) * 4096 / 2**20


@glibc
def test_trim_heap_returns_what_freed_arrays_left_resident() -> None:
    big = np.ones(1 << 20)  # 8 MiB mapped and unmapped: glibc's mmap threshold rises to it
    del big
    arrays, pins = [], []
    for _ in range(64):  # 64 x 2 MiB, now on the heap, each followed by a small block that stays
        arrays.append(np.ones(1 << 18))
        pins.append(np.ones(1024))
    held = _resident_mib()
    del arrays
    kept = _resident_mib()
    assert trim_heap()
    after = _resident_mib()
    assert kept - after > 64, (held, kept, after)  # most of the 128 MiB freed went back
    del pins


def test_trimmer_trims_every_nth_step(monkeypatch: pytest.MonkeyPatch) -> None:
    calls: list[int] = []
    monkeypatch.setattr(heap, "trim_heap", lambda: calls.append(1) or True)
    trim = HeapTrimmer(every=3)
    assert [trim.step() for _ in range(7)] == [False, False, True, False, False, True, False]
    assert len(calls) == 2 and trim.steps == 7


def test_no_glibc_trims_nothing(monkeypatch: pytest.MonkeyPatch) -> None:
    heap._malloc_trim.cache_clear()
    monkeypatch.setattr(sys, "platform", "darwin")
    try:
        assert trim_heap() is False
        assert HeapTrimmer(every=1).step() is False
    finally:
        monkeypatch.undo()
        heap._malloc_trim.cache_clear()


def test_every_must_be_positive() -> None:
    with pytest.raises(ValueError, match="at least 1"):
        HeapTrimmer(every=0)
