"""Capture's time check (:mod:`records.budget`), in its two stages. The static one is light
enough for the command line to run before torch is imported: more prompts than could be
captured within :data:`records.budget.TIME_LIMIT` on any machine (at
:data:`records.budget.PROMPT_FLOOR_S` seconds each) are refused before any is tokenised
(:func:`check_prompt_count`). The timed one (:class:`FirstBatchClock`) refuses, after the
first batch, on the time that batch took here."""

from __future__ import annotations

import time
from typing import Any

from ..records.budget import PROMPT_FLOOR_S, check_time, floor_refusal
from .errors import InterpError


def check_prompt_count(prompts: Any) -> None:
    """Raise :class:`InterpError` (exit status 2) when ``prompts`` (a list, a tensor or an
    object with ``input_ids``) are too many to capture within the limit on any machine."""
    try:
        n = len(prompts)
    except TypeError:  # an object with input_ids: its rows
        n = len(getattr(prompts, "input_ids", ()))
    message = floor_refusal(f"capturing {n:,} prompts", n, "prompts", PROMPT_FLOOR_S,
                            "the number of prompts")
    if message is not None:
        raise InterpError(message)


class FirstBatchClock:
    """Started before a capture of ``n`` prompts; :meth:`batch_done` after each batch refuses
    (:class:`InterpError`, with the estimate) once, after the first, when ``n`` prompts at that
    batch's seconds per prompt would run past the limit."""

    def __init__(self, n: int) -> None:
        self.n, self.t0, self.timed = n, time.perf_counter(), False

    def batch_done(self, prompts: int) -> None:
        """``prompts`` more prompts captured (the first call checks, the others do nothing)."""
        if self.timed:
            return
        self.timed = True
        check_time((time.perf_counter() - self.t0) / max(prompts, 1), self.n,
                   f"capturing {self.n:,} prompts", "the number of prompts", unit="prompts",
                   error=InterpError)
