"""bayesgeom: the Bayesian geometry of transformer attention, in wind tunnels with exact
posteriors and in any Hugging Face causal LM, with one code path for both.

The one import name of the installed distribution. Its subpackages are the repository's
top-level folders: ``bayesgeom.records`` and ``bayesgeom.infotheory`` (bottom),
``bayesgeom.interp``, ``bayesgeom.probes`` and ``bayesgeom.windtunnel`` (side by side) and
``bayesgeom.analyses`` (experiments and the command line). This module is the notebook
façade for the three user stories; every name is imported on first use, so ``import
bayesgeom`` loads neither torch nor transformers (50 ms).

Example:
    >>> import bayesgeom as bg
    >>> bg.site_name("attn.v", 3)
    'attn.3.v'
    >>> model = bg.open_model()  # doctest: +SKIP
    >>> store = bg.capture(model, ["The capital of France is"], ["attn.-1.v"])  # doctest: +SKIP
"""

from __future__ import annotations

import importlib
import warnings
from importlib.metadata import PackageNotFoundError, version
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    # The façade's names as type checkers, editors and the API reference (griffe) read them,
    # each from the module that defines it: ``interp.capture`` would read as the submodule
    # ``interp/capture.py`` there. tests/test_api_reference.py holds this block to ``_NAMES``.
    from .analyses.compare.config import CompareConfig
    from .analyses.compare.run import run_compare
    from .analyses.geometry.config import GeometryConfig
    from .analyses.geometry.run import run_geometry
    from .analyses.kit.models import open_model
    from .analyses.registry import experiments
    from .analyses.steer.config import SteerConfig
    from .analyses.steer.run import run_steer
    from .interp.capture import capture
    from .interp.init_twin import random_init_twin
    from .interp.intervention_kinds import AddVector, ProjectOut, ShiftAlong
    from .interp.interventions import intervene
    from .interp.loading import load
    from .interp.sites import site_name
    from .probes.entropy_axis import fit_entropy_axis
    from .probes.entropy_probe import entropy_probe
    from .probes.pca_summary import summarize_pca
    from .windtunnel.runs import load_run, read_run
    from .windtunnel.train_config import TrainConfig
    from .windtunnel.training import train

# huggingface_hub imports tqdm.auto, which in a Jupyter kernel without ipywidgets warns
# "IProgress not found" as it is imported: every notebook opened with that warning. bayesgeom's
# own bars are text bars there (records.progress), so the warning says nothing to its users.
warnings.filterwarnings("ignore", message="IProgress not found")

try:
    __version__ = version("bayesgeom")
except PackageNotFoundError:  # a source tree that was never installed
    __version__ = "0+unknown"

#: the subpackages, importable as attributes (``bg.interp``, ``bg.probes`` ...)
SUBPACKAGES = ("records", "infotheory", "interp", "probes", "windtunnel", "analyses")

#: façade name -> (module under bayesgeom, attribute)
_NAMES = {
    # (a) load a Hugging Face model (or a wind-tunnel run) and run a probe
    "open_model": ("analyses.kit.models", "open_model"),
    "load": ("interp", "load"),
    "capture": ("interp", "capture"),
    "site_name": ("interp", "site_name"),
    "random_init_twin": ("interp", "random_init_twin"),
    "fit_entropy_axis": ("probes", "fit_entropy_axis"),
    "entropy_probe": ("probes", "entropy_probe"),
    "summarize_pca": ("probes", "summarize_pca"),
    # (c) causal steering against its null
    "intervene": ("interp", "intervene"),
    "ProjectOut": ("interp", "ProjectOut"),
    "ShiftAlong": ("interp", "ShiftAlong"),
    "AddVector": ("interp", "AddVector"),
    "SteerConfig": ("analyses.steer", "SteerConfig"),
    "run_steer": ("analyses.steer", "run_steer"),
    # wind tunnels: train or open one
    "TrainConfig": ("windtunnel.training", "TrainConfig"),
    "train": ("windtunnel.training", "train"),
    "load_run": ("windtunnel.runs", "load_run"),
    "read_run": ("windtunnel.runs", "read_run"),
    # (b) compare small and large models with the same code
    "GeometryConfig": ("analyses.geometry", "GeometryConfig"),
    "run_geometry": ("analyses.geometry", "run_geometry"),
    "CompareConfig": ("analyses.compare", "CompareConfig"),
    "run_compare": ("analyses.compare", "run_compare"),
    "experiments": ("analyses.registry", "experiments"),
}

__all__ = [*SUBPACKAGES, *_NAMES, "__version__"]


def __getattr__(name: str) -> Any:
    if name in SUBPACKAGES:
        return importlib.import_module(f"{__name__}.{name}")
    if name in _NAMES:
        module, attr = _NAMES[name]
        value = getattr(importlib.import_module(f"{__name__}.{module}"), attr)
        globals()[name] = value
        return value
    raise AttributeError(f"module 'bayesgeom' has no attribute {name!r}")


def __dir__() -> list[str]:
    return sorted(__all__)
