"""The Paper II training-dynamics monitor: no command of its own, it runs inside ``bayesgeom
windtunnel train --monitor-every N`` (:mod:`analyses.commands.windtunnel`). :mod:`.run` is the
monitor (:class:`DynamicsMonitor`, what it reads every N steps); :mod:`.result` its rows as a
tidy table (``dynamics.csv``); :mod:`.timescales` the settle steps; :mod:`.findings` the verdict
table; :mod:`.figures` and :mod:`.report` ``dynamics.html`` and the terminal summary."""

from ...kit.experiment import lazy_exports

#: the package's names, each imported on first use (importing the package imports no torch)
EXPORTS = {"DynamicsMonitor": "run", "read_dynamics": "result", "settle_steps": "timescales"}
__all__ = list(EXPORTS)
__getattr__ = lazy_exports(__name__, EXPORTS)
