"""analyses: experiments composing ``interp``, ``probes`` and ``windtunnel``, their reports and
the ``bayesgeom`` command line.

Each experiment is one folder (command name = folder name): ``run.py`` (its config and run
function returning a typed result), ``result.py`` (that result, serialised as ``summary.json``),
``report.py`` (figures, tables, terminal text) and an ``__init__`` whose ``EXPERIMENTS`` entry
(:class:`analyses.kit.Experiment`) the command line registers (:mod:`analyses.registry`). They
stand on :mod:`analyses.kit` (run options, the error type, the one run writer,
:func:`analyses.kit.models.open_model`, which turns any model spec, wind tunnels included, into an
:class:`interp.InterpModel`) and :mod:`analyses.prompts` (the prompt data layer).
"""

from ..records.lazy import submodules

#: each subpackage and module by its name, imported on first use (``bg.analyses.steer``)
__getattr__ = submodules(__name__)
