"""bayesgeom: the Bayesian geometry of transformer attention, in wind tunnels with exact
posteriors and in any Hugging Face causal LM, with one code path for both.

The one import name of the installed distribution. Its subpackages are the repository's
top-level folders: ``bayesgeom.records`` and ``bayesgeom.infotheory`` (bottom),
``bayesgeom.interp``, ``bayesgeom.probes`` and ``bayesgeom.windtunnel`` (side by side) and
``bayesgeom.analyses`` (experiments and the command line). This module is the notebook
façade for the three user stories -- (a) load a Hugging Face model (or a wind-tunnel run) and
run a probe: ``open_model``, ``load``, ``capture``, ``site_name``, ``random_init_twin``,
``fit_entropy_axis``, ``entropy_probe``, ``summarize_pca``; (b) compare small and large models
with the same code: ``GeometryConfig``/``run_geometry``, ``CompareConfig``/``run_compare``,
``experiments``; (c) causal steering against its null: ``intervene``, ``ProjectOut``,
``ShiftAlong``, ``AddVector``, ``SteerConfig``/``run_steer``, and where the evidence is stored:
``PatchConfig``/``run_patch`` -- and the wind tunnels
(``TrainConfig``, ``train``, ``load_run``, ``read_run``). Every name is imported on first use
(:mod:`records.lazy`), so ``import bayesgeom`` loads neither torch nor transformers (50 ms).

Example:
    >>> import bayesgeom as bg
    >>> bg.site_name("attn.v", 3)
    'attn.3.v'
    >>> model = bg.open_model()  # doctest: +SKIP
    >>> store = bg.capture(model, ["The capital of France is"], ["attn.-1.v"])  # doctest: +SKIP
"""

from __future__ import annotations

import warnings
from importlib.metadata import PackageNotFoundError, version
from typing import TYPE_CHECKING

from .records.lazy import lazy_exports

# huggingface_hub imports tqdm.auto, which in a Jupyter kernel without ipywidgets warns
# "IProgress not found" as it is imported: every notebook opened with that warning. bayesgeom's
# own bars are text bars there (records.progress), so the warning says nothing to its users.
warnings.filterwarnings("ignore", message="IProgress not found")

try:
    __version__ = version("bayesgeom")
except PackageNotFoundError:  # a source tree that was never installed
    __version__ = "0+unknown"

if TYPE_CHECKING:
    # The façade's names, each from the module that defines it (type checkers, editors and the
    # API reference read them here; ``interp.capture`` would read as the submodule
    # ``interp/capture.py`` to griffe). records.lazy imports each on first use from these lines.
    from . import analyses, infotheory, interp, probes, records, windtunnel
    from .analyses.compare.config import CompareConfig
    from .analyses.compare.run import run_compare
    from .analyses.geometry.config import GeometryConfig
    from .analyses.geometry.run import run_geometry
    from .analyses.kit.models import open_model
    from .analyses.lens.config import LensConfig
    from .analyses.lens.run import run_lens
    from .analyses.patch.config import PatchConfig
    from .analyses.patch.run import run_patch
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

#: the subpackages, importable as attributes (``bg.interp``, ``bg.probes`` ...)
SUBPACKAGES = ("records", "infotheory", "interp", "probes", "windtunnel", "analyses")

#: the subpackages and the names of the three user stories (module doc)
__all__ = [
    "AddVector",
    "CompareConfig",
    "GeometryConfig",
    "LensConfig",
    "PatchConfig",
    "ProjectOut",
    "ShiftAlong",
    "SteerConfig",
    "TrainConfig",
    "__version__",
    "analyses",
    "capture",
    "entropy_probe",
    "experiments",
    "fit_entropy_axis",
    "infotheory",
    "interp",
    "intervene",
    "load",
    "load_run",
    "open_model",
    "probes",
    "random_init_twin",
    "read_run",
    "records",
    "run_compare",
    "run_geometry",
    "run_lens",
    "run_patch",
    "run_steer",
    "site_name",
    "summarize_pca",
    "train",
    "windtunnel",
]

#: each name of the façade is imported on first use (:mod:`records.lazy`)
__getattr__ = lazy_exports(__name__)


def __dir__() -> list[str]:
    return sorted(__all__)
