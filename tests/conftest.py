import os

os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")

import pytest


def load_factor() -> float:
    """How many times slower than when idle this machine runs now: its 1-minute load average
    per core, at least 1."""
    return max(1.0, os.getloadavg()[0] / (os.cpu_count() or 1))


@pytest.fixture(scope="session")
def scaled():
    """``scaled(s)``: a wall-clock limit of ``s`` seconds on an idle machine, stretched by the
    load when it is asked (300 s is 1,200 s at load 8 on 2 cores), so that a loaded machine
    is slower, not wrong; the work under the limit is bounded by the test itself."""
    return lambda seconds: seconds * load_factor()


class Killed(Exception):
    """A run cut at a step (``on_step=die_at(n)``), as a crash or Ctrl-C would cut it."""


def die_at(step: int):
    """An ``on_step`` callback of ``train`` that raises :class:`Killed` at ``step``."""

    def die(at: int) -> None:
        if at == step:
            raise Killed

    return die
