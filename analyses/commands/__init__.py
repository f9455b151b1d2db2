"""One module per ``bayesgeom`` command, each with ``register(subparsers, parent)``; the
options come from the command's config dataclass (:mod:`analyses.options`)."""
