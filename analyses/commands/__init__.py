"""The ``bayesgeom`` commands that are not experiments: ``windtunnel sample | train | eval``,
``capture`` and ``models``, each module with ``register(subparsers, parent)``; their options come
from config dataclasses (:mod:`analyses.kit.options`). Experiments come from
:mod:`analyses.registry`."""
