"""How long a run may take, and the one-line refusal of a size that would run past it.

Every size-like option (steps, controls, prompts, a pool, resamples, ...) reaches this module in
two stages, so that a value that would not end is refused *before* the work, with the estimate
and the option to lower (a :class:`UsageError`, exit status 2):

1. **static, torch-free** -- the option declares a :class:`Cost` (``option(..., cost=Cost(...))``):
   a floor on the seconds one unit takes on *any* machine (the cheapest plausible time of one
   step, control or prompt, well below what was measured). :func:`records.check_options` (so
   every config's ``check()``) refuses ``value x floor > limit`` before anything heavy is
   imported: ``steer --n-random 100000000`` is answered in well under a second. A floor never
   refuses a run that could end, so it only catches absurd values;
2. **timed** -- once the model is loaded (and before the long loop, or after its first batch),
   the command times one unit here (one training step, one edited pass, one batch of prompts)
   and calls :func:`check_time`: ``units x seconds > limit`` is refused with the estimate.

Both stages use one limit, :data:`TIME_LIMIT` (6 h), read at each call so that tests can lower
it (``monkeypatch.setattr(records.budget, "TIME_LIMIT", 1.0)``) instead of depending on the
machine's speed; a user who means to wait longer sets ``BAYESGEOM_TIME_LIMIT_H`` (hours), which
every refusal names. Why a refusal and not a warning: a run past the limit looks like a hang (no
estimate, hours of silence), and the fix, a smaller value, is one flag away.

Example:
    >>> check_time(0.5, 100, "x", "--n", limit=60)  # 50 s: runs
    >>> check_time(0.5, 200, "x", "--n", unit="steps", limit=60)  # doctest: +ELLIPSIS
    Traceback (most recent call last):
    ...
    bayesgeom.records.errors.UsageError: x would take about 0.0 h on this machine (200 steps ...
"""

from __future__ import annotations

import math
import os
import time
from collections.abc import Callable
from dataclasses import dataclass

from .errors import UsageError

#: a run projected to take longer than this (seconds) is refused before its work
TIME_LIMIT = 6 * 3600.0
#: the environment variable (hours) that replaces :data:`TIME_LIMIT` for a user who means to wait
LIMIT_ENV = "BAYESGEOM_TIME_LIMIT_H"

#: floors (seconds) of one unit on any machine, for :class:`Cost` declarations: one optimiser
#: step of the smallest model (a few ms measured on a laptop core for the tiny wind tunnel)
STEP_FLOOR_S = 1e-3
#: one prompt or sequence tokenised and run through a model (batched; ~1 ms measured on a core)
PROMPT_FLOOR_S = 1e-4
#: one resample, permutation or random draw of a statistic over a run's prompts
DRAW_FLOOR_S = 1e-6


def limit_s(limit: float | None = None) -> float:
    """``limit``, else ``$BAYESGEOM_TIME_LIMIT_H`` hours, else :data:`TIME_LIMIT` as it is now
    (all read at the call, so tests may lower it); a value that is not a number of hours above
    0 is a :class:`UsageError`."""
    if limit is not None:
        return limit
    raw = os.environ.get(LIMIT_ENV)
    if raw is None or not raw.strip():
        return TIME_LIMIT
    try:
        hours = float(raw)
    except ValueError:
        hours = math.nan
    if not (math.isfinite(hours) and hours > 0):
        raise UsageError(f"{LIMIT_ENV} must be a number of hours above 0, got {raw!r}")
    return hours * 3600.0


def _limit_text(lim: float) -> str:
    return f"the limit is {lim / 3600:g} h; {LIMIT_ENV} raises it"


def _seconds(s: float) -> str:
    return f"{s:.2f}" if s >= 0.01 else f"{s:.1e}"


def time_refusal(unit_seconds: float, units: int, what: str, lower: str, unit: str = "batches",
                 limit: float | None = None) -> str | None:
    """The one-line refusal of ``units`` units of ``unit_seconds`` seconds each when together
    they run past ``limit`` seconds (default :data:`TIME_LIMIT`); None when they fit."""
    lim = limit_s(limit)
    total = unit_seconds * units
    if total <= lim:
        return None
    return (f"{what} would take about {total / 3600:,.1f} h on this machine ({units:,} {unit} "
            f"of {_seconds(unit_seconds)} s; {_limit_text(lim)}); lower {lower}")


def check_time(unit_seconds: float, units: int, what: str, lower: str, unit: str = "batches",
               error: Callable[[str], Exception] = UsageError,
               limit: float | None = None) -> None:
    """Raise ``error`` (a :class:`UsageError` unless the caller names its own) with
    :func:`time_refusal`'s line when ``units`` units of ``unit_seconds`` s run past the limit."""
    message = time_refusal(unit_seconds, units, what, lower, unit, limit)
    if message is not None:
        raise error(message)


@dataclass(frozen=True)
class Cost:
    """What one unit of a size-like option costs at least, on any machine: ``seconds`` (the
    floor: the cheapest plausible time of one ``unit``, such as ``"steps"``, well below the
    time measured on a laptop CPU) and ``per`` (the value counts units directly, ``"value"``;
    or a tuple of sizes counts their ``"sum"`` or the ``"count"`` of its elements)."""

    seconds: float
    unit: str
    per: str = "value"

    def units(self, value: object) -> int:
        """The units ``value`` (an int, or a tuple of ints) asks for."""
        if isinstance(value, tuple | list):
            return len(value) if self.per == "count" else int(sum(abs(v) for v in value))
        return int(value)  # type: ignore[call-overload]

    def refusal(self, flag: str, value: object, limit: float | None = None) -> str | None:
        """The one-line static refusal of ``flag`` = ``value`` when its units take longer than
        ``limit`` (default :data:`TIME_LIMIT`) even at the floor; None when they could end."""
        n = self.units(value)
        shown = f"{flag} {value:,}" if isinstance(value, int) else f"{flag} ({n:,} {self.unit})"
        return floor_refusal(shown, n, self.unit, self.seconds, flag, limit)


def floor_refusal(what: str, units: int, unit: str, floor_seconds: float, lower: str,
                  limit: float | None = None) -> str | None:
    """The one-line refusal of ``units`` units that take longer than ``limit`` (default
    :data:`TIME_LIMIT`) even at ``floor_seconds`` each, on any machine; None when they could
    end. The static stage: nothing is timed, nothing heavy is imported."""
    lim = limit_s(limit)
    floor = units * floor_seconds
    if floor <= lim:
        return None
    return (f"{what} cannot end within the limit on any machine: {units:,} {unit} take at "
            f"least {floor / 3600:,.1f} h at {_seconds(floor_seconds)} s each ({_limit_text(lim)}"
            f"); lower {lower}")


class Paced(Exception):
    """Raised by :meth:`Pace.update` once a probe has timed its units."""


class Pace:
    """A stand-in for a progress bar (``update(n)``) that records when each update came, so
    that a few units of a loop give the seconds one unit takes, the first (its setup: a model
    built, threads started) left out: :meth:`unit_seconds`.

    Example:
        >>> p = Pace()
        >>> for _ in range(3):
        ...     p.update()
        >>> p.unit_seconds() >= 0
        True
    """

    def __init__(self, stop_after: int | None = None) -> None:
        self.stop_after = stop_after
        self.times: list[tuple[float, int]] = [(time.perf_counter(), 0)]

    def update(self, n: int = 1) -> None:
        """One more ``n`` units done; past ``stop_after`` updates, :class:`Paced` is raised so
        that a probe stops its loop there (the caller catches it)."""
        self.times.append((time.perf_counter(), n))
        if self.stop_after is not None and len(self.times) > self.stop_after:
            raise Paced

    def set_postfix_str(self, _: str) -> None:
        """As a bar's (ignored)."""

    def unit_seconds(self) -> float:
        """Seconds per unit after the first update (all of them when there was only one)."""
        marks = self.times[1:] if len(self.times) > 2 else self.times
        units = sum(n for _, n in marks[1:])
        return (marks[-1][0] - marks[0][0]) / max(units, 1)


#: the usual costs, for ``option(..., cost=...)``
STEPS = Cost(STEP_FLOOR_S, "training steps")
PROMPTS = Cost(PROMPT_FLOOR_S, "prompts")
SEQUENCES = Cost(PROMPT_FLOOR_S, "sequences")
DRAWS = Cost(DRAW_FLOOR_S, "draws")
#: a token of a sequence's length (positions run through a model)
TOKENS = Cost(DRAW_FLOOR_S, "tokens")
#: each element of a tuple of lengths (their sum of tokens)
TOKEN_LIST = Cost(DRAW_FLOOR_S, "tokens", per="sum")
#: runs (trainings or evaluations) the value counts
RUNS = Cost(STEP_FLOOR_S, "runs")
#: runs, one per element of a tuple
RUN_LIST = Cost(STEP_FLOOR_S, "runs", per="count")
#: a random control direction of steer (at least one edited pass of every condition)
CONTROLS = Cost(STEP_FLOOR_S, "controls")
#: a training step of em-vs-sgd's deep variant (4 blocks, 2,000 positions; 2.5 s on a core)
DEEP_STEPS = Cost(10 * STEP_FLOOR_S, "deep training steps")
