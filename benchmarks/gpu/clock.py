"""The session's clock: one wall-time budget for the whole session, and a deadline per part.

Each part gets its own budget (seconds) but never more than what is left of the session minus
a reserve for writing the results; a part checks :meth:`Deadline.left` between its units of
work (a family, a preset, a training run) and records what it skipped.
"""

from __future__ import annotations

import time
from dataclasses import dataclass, field


@dataclass
class Deadline:
    """A part's deadline: ``end`` on the ``time.perf_counter`` clock (seconds)."""

    name: str
    budget_s: float
    end: float
    start: float = field(default_factory=time.perf_counter)

    def left(self) -> float:
        """Seconds left before the deadline (negative once past it)."""
        return self.end - time.perf_counter()

    def spent(self) -> float:
        return time.perf_counter() - self.start

    def over(self, need_s: float = 0.0) -> bool:
        """True when less than ``need_s`` seconds are left."""
        return self.left() < need_s


@dataclass
class SessionClock:
    """The whole session's budget (``total_s`` seconds of wall time from construction) with
    ``reserve_s`` kept back at the end for writing the result files."""

    total_s: float
    reserve_s: float = 10.0
    start: float = field(default_factory=time.perf_counter)
    parts: dict[str, dict[str, float | str]] = field(default_factory=dict)

    def left(self) -> float:
        return self.start + self.total_s - self.reserve_s - time.perf_counter()

    def part(self, name: str, budget_s: float) -> Deadline:
        """A deadline for part ``name``: ``budget_s`` seconds or what is left, the smaller."""
        now = time.perf_counter()
        give = max(0.0, min(budget_s, self.left()))
        return Deadline(name, budget_s, now + give, now)

    def record(self, d: Deadline, status: str) -> None:
        """Keep the part's budget, time spent and status (``done``, ``partial``, ``skipped``,
        ``error: ...``) for the session summary."""
        self.parts[d.name] = {"budget_s": round(d.budget_s, 1), "spent_s": round(d.spent(), 2),
                              "status": status}

    def elapsed(self) -> float:
        return time.perf_counter() - self.start
