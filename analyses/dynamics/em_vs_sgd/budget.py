"""The timed stage of ``em-vs-sgd``'s time check (:mod:`records.budget`): before the run folder
is claimed, one step of a protocol batch (and, with ``--deep``, one step of the deep variant)
is timed here, and a run whose steps would take longer than the limit is refused with the
estimate and the option to lower. The estimate is a floor: every protocol batch (one per tuned
protocol and one per protocol) costs at least what one run's step costs alone.

Runs of at most :data:`UNTIMED_STEPS` batch steps (:data:`UNTIMED_DEEP_STEPS` deep steps) are
not timed: they end soon anyway (the default run, 16 batches of 1,000 steps, is not timed)."""

from __future__ import annotations

import contextlib

from ....records.budget import Pace, Paced, check_time
from ....windtunnel import sticky_chain as sc
from .config import EmVsSgdConfig
from .deep import train_deep
from .protocols import PILOT_SEED, PROTOCOLS
from .sticky_trainer import train_batch

#: batch steps (protocol batches x steps) up to which the run is not timed
UNTIMED_STEPS = 20_000
#: deep-variant steps (seeds x steps) up to which the deep variant is not timed
UNTIMED_DEEP_STEPS = 200


def batch_step_seconds() -> float:
    """Seconds one full-batch step of one run takes here (the first protocol, the pilot seed;
    the step after the first, so that setup is left out)."""
    proto = next(iter(PROTOCOLS.values()))
    value = proto.trials(True)[0] if proto.tuned else proto.fixed
    pace = Pace()
    train_batch([sc.make_sequence(PILOT_SEED)], [proto.settings(value)], 3, pace)
    return pace.unit_seconds()


def deep_step_seconds() -> float:
    """Seconds one AdamW step of the deep variant takes here (its second step)."""
    pace = Pace(stop_after=2)
    with contextlib.suppress(Paced):  # stopped after its second step
        train_deep(PILOT_SEED, 2, pace)  # type: ignore[arg-type]
    return pace.unit_seconds()


def check_budget(cfg: EmVsSgdConfig) -> None:
    """Refuse (``cfg.error``, exit status 2) a run whose protocol batches or deep variant would
    take longer than :data:`records.budget.TIME_LIMIT` on this machine."""
    batches = len(PROTOCOLS) + sum(1 for p in PROTOCOLS.values() if p.tuned)
    if batches * cfg.n_steps > UNTIMED_STEPS:
        check_time(batch_step_seconds(), batches * cfg.n_steps,
                   f"training {batches} protocol batches for {cfg.n_steps:,} steps", "--steps",
                   unit="batch steps", error=cfg.error)
    seeds = len(cfg.deep_seed_list())
    if seeds * cfg.deep_steps > UNTIMED_DEEP_STEPS:
        check_time(deep_step_seconds(), seeds * cfg.deep_steps,
                   f"the deep variant on {seeds} seeds for {cfg.deep_steps:,} steps",
                   "--deep-steps or --deep-seeds", unit="deep steps", error=cfg.error)
