"""What the GPU machine lacks and the wheels the session carries there.

The GPU machine (``nvidia-h100-x1`` / ``nvidia-h200``, Python 3.12, x86-64, no network) has
the packages of :data:`THERE` (its image's list, read 2026-11-17: torch 2.11, transformers
5.17, numpy, pandas, pyarrow, scikit-learn, scipy, safetensors, tqdm, filelock, accelerate,
...). Of bayesgeom's dependencies it lacks plotly, dacite, gguf, mambapy, transformer-lens and
rdata (:data:`LACKING`). The session needs two of them (:data:`WHEELS`, pure-Python wheels):
``dacite`` (``records`` reads typed results with it at import time, 16 KiB) and ``plotly``
(:func:`windtunnel.training.train` writes every finished run's ``figures.html`` with it;
9.2 MiB, its own needs narwhals and packaging are there). ``mambapy`` stays behind: without it
HF's Mamba takes its sequential scan, which also runs in bfloat16 (HF's mambapy path mixes
float32 states with bf16 weights and fails there). ``make gpu-wheels`` downloads
:data:`WHEELS` into ``.whl/``; :class:`ImportRecorder` and :func:`needed` turn the modules a
session imported into the distributions the machine lacks, and :func:`emulate_machine` hides
the rest of :data:`LACKING` here, so the dry run meets what the GPU machine has.

This module imports nothing beyond the standard library.
"""

from __future__ import annotations

import re
import sys
from collections.abc import Iterable

#: distribution -> pinned version carried as a cp312 / py3 manylinux x86-64 wheel
WHEELS: dict[str, str] = {"dacite": "1.9.2", "plotly": "7.1.0"}
#: their sizes as downloaded (bytes, 2026-11-26): 9.3 MiB beside the 42 MiB working tree
#: (38 MiB of it the committed paper-scale tunnels, 2026-11-27)
WHEEL_BYTES: dict[str, int] = {"dacite": 16_600, "plotly": 9_692_368}
#: the travel limit of the working tree with its carried paths (device README)
TRAVEL_LIMIT = 64 * 2**20
#: what the tree and the wheels must leave free of it (a session's own carried files)
TRAVEL_HEADROOM = 8 * 2**20

#: bayesgeom's dependencies the GPU machine does not have (device KINDS.md, 2026-11)
LACKING = ("plotly", "dacite", "gguf", "mambapy", "transformer-lens", "rdata")

#: the GPU image's Python packages (device KINDS.md, read 2026-11-17), normalised names
THERE = frozenset({
    "absl-py", "accelerate", "aiofiles", "aiohappyeyeballs", "aiohttp", "aiosignal",
    "annotated-doc", "anyio", "attrs", "botorch", "build", "certifi", "charset-normalizer", "chex",
    "click", "cloudpickle", "cmake", "colorama", "contourpy", "coverage", "cuda-bindings",
    "cuda-core", "cuda-pathfinder", "cuda-toolkit", "cupy-cuda13x", "cycler", "cython", "diffrax",
    "e3nn", "einops", "equinox", "etils", "execnet", "filelock", "flatbuffers", "flax",
    "fonttools", "formulaic", "frozenlist", "fsspec", "gpytorch", "grpcio", "h11", "h5py",
    "hf-xet", "httpcore", "httpx", "huggingface-hub", "humanize", "hypothesis", "idna", "imageio",
    "iniconfig", "interface-meta", "jax", "jax-cuda13-pjrt", "jax-cuda13-plugin", "jaxlib",
    "jaxtyping", "jinja2", "joblib", "kiwisolver", "lazy-loader", "lightning",
    "lightning-utilities", "linear-operator", "lineax", "llvmlite", "lxml", "markdown",
    "markdown-it-py", "markupsafe", "matplotlib", "mdurl", "meson", "ml-dtypes", "mpi4py",
    "mpmath", "msgpack", "multidict", "multipledispatch", "mypy-extensions", "nanobind",
    "narwhals", "networkx", "ninja", "numba", "numba-cuda", "numpy", "numpyro", "nvidia-cublas",
    "nvidia-cuda-cupti", "nvidia-cuda-nvrtc", "nvidia-cuda-runtime", "nvidia-cudnn-cu13",
    "nvidia-cufft", "nvidia-cufile", "nvidia-curand", "nvidia-cusolver", "nvidia-cusparse",
    "nvidia-cusparselt-cu13", "nvidia-ml-py", "nvidia-nccl-cu13", "nvidia-nvjitlink",
    "nvidia-nvshmem-cu13", "nvidia-nvtx", "onnx", "onnx-ir", "onnxruntime", "onnxscript",
    "opencv-python-headless", "optax", "opt-einsum", "opt-einsum-fx", "optimistix",
    "orbax-checkpoint", "packaging", "pandas", "pathspec", "patsy", "peft", "pillow", "pip",
    "pluggy", "portalocker", "prometheus-client", "propcache", "protobuf", "psutil", "pyarrow",
    "pybind11", "py-cpuinfo", "pygments", "pyparsing", "pyproject-hooks", "pyre-extensions",
    "pytest", "pytest-benchmark", "pytest-cov", "pytest-mock", "pytest-timeout", "pytest-xdist",
    "python-dateutil", "pytorch-lightning", "pyyaml", "regex", "requests", "rich", "sacrebleu",
    "safetensors", "scikit-build-core", "scikit-image", "scikit-learn", "scipy", "seaborn",
    "sentencepiece", "sentence-transformers", "setuptools", "shellingham", "simplejson", "six",
    "sortedcontainers", "statsmodels", "sympy", "tabulate", "tensorboard",
    "tensorboard-data-server", "tensorstore", "threadpoolctl", "tifffile", "tiktoken", "timm",
    "tokenizers", "toolz", "torch", "torchaudio", "torchdiffeq", "torch-geometric", "torchmetrics",
    "torchvision", "tqdm", "transformers", "treescope", "triton", "typer", "typing-extensions",
    "typing-inspect", "urllib3", "uvloop", "wadler-lindig", "werkzeug", "wheel", "wrapt", "xarray",
    "xxhash", "yarl", "zipp"
})


def normalise(name: str) -> str:
    """A distribution name as the package index compares them (PEP 503)."""
    return re.sub(r"[-_.]+", "-", name).lower()


def requirements() -> list[str]:
    """``name==version`` of every carried wheel (what ``make gpu-wheels`` downloads)."""
    return [f"{n}=={v}" for n, v in sorted(WHEELS.items())]


#: the import names of :data:`LACKING`
IMPORT_NAMES = {"plotly": "plotly", "dacite": "dacite", "gguf": "gguf", "mambapy": "mambapy",
                "transformer-lens": "transformer_lens", "rdata": "rdata"}


def emulate_machine() -> list[str]:
    """Make this process see what the GPU machine has: every package of :data:`LACKING`
    that is not carried as a wheel becomes unimportable (``import`` raises
    ``ModuleNotFoundError``, ``importlib.util.find_spec`` returns None, as for a package that
    is not installed). Call before anything imports them; returns the hidden import names."""
    hidden = [IMPORT_NAMES[d] for d in LACKING if d not in WHEELS]
    for name in hidden:
        sys.modules[name] = None  # type: ignore[assignment]
    return hidden


class ImportRecorder:
    """A meta-path finder that finds nothing and records, for each top-level module imported
    after :meth:`install`, the module that imported it (the first frame outside importlib),
    so a module that a third-party package imports for itself (its own dependency, or an
    optional one) is told apart from one this project imports."""

    def __init__(self) -> None:
        self.importers: dict[str, str] = {}

    def install(self) -> ImportRecorder:
        sys.meta_path.insert(0, self)  # type: ignore[arg-type]
        return self

    def find_spec(self, fullname: str, path: object = None, target: object = None) -> None:
        top = fullname.partition(".")[0]
        if top in self.importers or top in sys.stdlib_module_names:
            return None
        f = sys._getframe(1)
        while f is not None and (f.f_code.co_filename.startswith("<frozen")
                                 or "importlib" in f.f_code.co_filename):
            f = f.f_back
        self.importers[top] = "?" if f is None else str(f.f_globals.get("__name__", "?"))
        return None

    def ours(self) -> list[str]:
        """Top-level modules imported by this repository's code (bayesgeom, the session)."""
        return sorted(t for t, by in self.importers.items()
                      if by.partition(".")[0] in OWN_PACKAGES)


#: the importers counted as this repository's code
OWN_PACKAGES = ("bayesgeom", "gpu", "__main__", "gpu_session")


def distributions_of(modules: Iterable[str]) -> dict[str, list[str]]:
    """Top-level module -> the (normalised) distributions that install it, for the modules
    that some installed distribution provides."""
    from importlib.metadata import packages_distributions

    owners = packages_distributions()
    return {t: sorted({normalise(d) for d in owners[t]}) for t in sorted(set(modules))
            if t in owners}


def needed(modules: Iterable[str]) -> list[str]:
    """The distributions of ``modules`` (those this project imports) that the GPU machine
    lacks; the repository itself travels as the working tree, not as a wheel."""
    out: set[str] = set()
    for dists in distributions_of(modules).values():
        out |= {d for d in dists if d not in THERE and d != "bayesgeom"}
    return sorted(out)
