"""The static stage of capture's time check (:mod:`records.budget`), light enough for the
command line to run before torch is imported: more prompts than could be captured within
:data:`records.budget.TIME_LIMIT` on any machine (at :data:`records.budget.PROMPT_FLOOR_S`
seconds each) are refused before any is tokenised. After the first batch,
:func:`interp.capture` refuses on the time that batch took here."""

from __future__ import annotations

from typing import Any

from ..records.budget import PROMPT_FLOOR_S, floor_refusal
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
