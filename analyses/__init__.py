"""analyses: experiments composing ``interp``, ``probes`` and ``windtunnel``, their reports and
the ``bayesgeom`` command line. Each experiment is ``<name>.py`` (a config dataclass and a run
function returning a typed result) and ``<name>_report.py`` (figures, tables, terminal text);
:func:`analyses.models.open_model` turns any model spec (wind tunnels included) into an
:class:`interp.InterpModel`.
"""
