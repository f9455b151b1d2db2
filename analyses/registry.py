"""The experiments of the ``bayesgeom`` command line, one folder each (command name = folder
name, ``-`` for ``_``). A new experiment is a folder with its run, result and report modules
and an ``EXPERIMENTS`` tuple in its ``__init__``, plus its folder's name here.

Example:
    >>> [e.name for e in experiments()][:3]
    ['demo', 'geometry', 'compare']
"""

from __future__ import annotations

import importlib

from .kit.experiment import Experiment

#: the experiment folders, in the order ``bayesgeom --help`` lists them
FOLDERS = ("demo", "geometry", "compare", "sula", "steer", "sweep", "layer_geometry", "ablate",
           "frame_precision", "dynamics", "detect", "verify", "extrapolate", "monitor",
           "stability", "patch", "lens")

#: the help line of each command group (``bayesgeom dynamics ...``)
GROUPS = {"dynamics": "Paper II: gradient identities and EM-like training"}


def experiments() -> list[Experiment]:
    """Every registered experiment, in :data:`FOLDERS` order."""
    return [e for folder in FOLDERS
            for e in importlib.import_module(f"{__package__}.{folder}").EXPERIMENTS]
