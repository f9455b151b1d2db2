"""The training progress bar: over steps, or over the wall-time budget of a time-budgeted run.

A run with ``max_minutes`` stops when its budget is spent, usually long before its step count
(the demo's MLP baselines ask for 1,000,000 steps and run for about 20 s), so a bar over steps
would show a false total and ETA. Such a run's bar counts seconds of its budget instead, with
the step reached beside it.

Example:
    >>> bar = TrainingBar(total_steps=10, budget_s=None, step=0, elapsed_s=0.0, desc="t",
    ...                   enabled=False)
    >>> bar.advance(step=1, elapsed_s=0.1); bar.done
    1
    >>> timed = TrainingBar(10**6, budget_s=20.0, step=0, elapsed_s=0.0, desc="t",
    ...                     enabled=False)
    >>> timed.advance(step=5, elapsed_s=2.5); timed.total, timed.done
    (20.0, 2.5)
"""

from __future__ import annotations

from typing import Any

from ..records.progress import tqdm


class TrainingBar:
    """A tqdm bar over ``total_steps``, or over ``budget_s`` seconds when the run has a
    wall-time budget (then the postfix shows the step). ``postfix(**kw)`` adds values shown
    beside it (the latest held-out MAE ...)."""

    def __init__(self, total_steps: int, budget_s: float | None, step: int, elapsed_s: float,
                 desc: str, enabled: bool):
        self.budget = budget_s
        self.extra: dict[str, Any] = {}
        #: the bar's total and position: steps, or seconds of the budget
        self.total: float = total_steps if budget_s is None else budget_s
        self.done: float = step if budget_s is None else min(elapsed_s, budget_s)
        if budget_s is None:
            self.bar = tqdm(total=total_steps, initial=step, desc=desc, unit="step",
                            disable=not enabled, dynamic_ncols=True)
        else:
            self.bar = tqdm(total=budget_s, initial=min(elapsed_s, budget_s), desc=desc,
                            unit="s", disable=not enabled, dynamic_ncols=True,
                            bar_format="{l_bar}{bar}| {n:.0f}/{total:.0f} s of the time budget "
                                       "[{elapsed}<{remaining}{postfix}]")

    def advance(self, step: int, elapsed_s: float) -> None:
        """After optimiser step ``step``, ``elapsed_s`` seconds into the run."""
        if self.budget is None:
            self.done = step
            self.bar.update(1)
            return
        now = min(elapsed_s, self.budget)
        self.bar.update(now - self.done)
        self.done = now
        self.extra["step"] = step
        self.bar.set_postfix(self.extra, refresh=False)

    def postfix(self, **kw: Any) -> None:
        self.extra.update(kw)
        self.bar.set_postfix(self.extra)

    def close(self) -> None:
        self.bar.close()
