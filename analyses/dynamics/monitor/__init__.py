"""The Paper II training-dynamics monitor: no command of its own, it runs inside ``bayesgeom
windtunnel train --monitor-every N`` (:mod:`analyses.commands.windtunnel`). :mod:`.run` is the
monitor (:class:`DynamicsMonitor`, what it reads every N steps); :mod:`.result` its rows as a
tidy table (``dynamics.csv``); :mod:`.timescales` the settle steps; :mod:`.findings` the verdict
table; :mod:`.figures` and :mod:`.report` ``dynamics.html`` and the terminal summary."""

from typing import TYPE_CHECKING

from ....records.lazy import lazy_exports

if TYPE_CHECKING:
    from .result import read_dynamics
    from .run import DynamicsMonitor
    from .timescales import settle_steps

__all__ = ["DynamicsMonitor", "read_dynamics", "settle_steps"]
#: each name is imported on first use (:mod:`records.lazy`): importing the package imports no torch
__getattr__ = lazy_exports(__name__)
