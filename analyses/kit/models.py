"""Where a model spec becomes an :class:`interp.InterpModel`: the one composition point of
``interp`` (any Hugging Face causal LM) and ``windtunnel`` (which opens its own runs).

A spec is a Hub name, a local model directory, a wind-tunnel run (or its ``model/`` or a
checkpoint inside it), None or ``"default"`` (the embedded SmolLM2), or an already loaded
model. A wind tunnel comes back with its task attached (``model.task``), which is how the
experiments know to read its hypothesis tokens and exact posteriors.

Example:
    >>> from bayesgeom.analyses.kit.models import open_model
    >>> llm = open_model(None)                            # doctest: +SKIP
    >>> wt = open_model("runs/demo/windtunnel/transformer")  # doctest: +SKIP
    >>> wt.task.name, wt.info.source                      # doctest: +SKIP
    ('bijection', 'windtunnel')
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import torch

from ... import interp
from ...interp.loading import parse_dtype
from ...windtunnel import is_windtunnel_dir, load_run
from ...windtunnel.runs import find_run
from .errors import ExperimentError
from .model_facts import check_with


def open_model(spec: str | Path | interp.InterpModel | None = None, *,
               dtype: str | None = None, device: str | None = None,
               revision: str | None = None, backend: str = "hf",
               allow_pickle: bool = False) -> interp.InterpModel:
    """An :class:`interp.InterpModel` for ``spec`` (see the module doc); a wind tunnel gets
    its task attached. Raises :class:`interp.ModelNotAvailableError` naming what is wrong, or
    a :class:`records.FileFault` naming a damaged file. ``allow_pickle``: also load pickle
    weights (safetensors only without it; see :func:`interp.load`)."""
    if isinstance(spec, interp.InterpModel):
        return spec
    path = Path(str(spec)).expanduser() if spec is not None else None
    if path is None or not is_windtunnel_dir(path):
        return interp.load(spec, dtype=dtype, device=device, revision=revision, backend=backend,
                           allow_pickle=allow_pickle)
    if device is not None:
        interp.check_device(device)
    run = load_run(path)  # a damaged run raises a one-line CheckpointError naming the file
    hf = run.model
    td = parse_dtype(dtype)
    if isinstance(td, torch.dtype):
        hf = hf.to(td)
    if device is not None:
        hf = hf.to(device)
    return interp.InterpModel(hf, None, name=str(path), source="windtunnel", task=run.task,
                              backend=backend, tl_source=str(path))


def twin_seed(spec: str | Path | interp.InterpModel | None, explicit: int | None,
              fallback: int) -> int:
    """The seed of ``spec``'s random-initialisation twin: ``explicit`` when given; else, for a
    wind-tunnel run (or its ``model/`` or a checkpoint in it), the run's training seed from its
    run record (:func:`windtunnel.runs.find_run`, which reads it with ``read_run``), so that
    :func:`interp.random_init_twin` rebuilds the run's step 0; else ``fallback`` (``--seed``).

    Example:
        >>> twin_seed(None, None, 7), twin_seed("runs/x", 3, 7)
        (7, 3)
    """
    if explicit is not None:
        return int(explicit)
    if spec is None or isinstance(spec, interp.InterpModel):
        return int(fallback)
    rec = find_run(Path(str(spec)).expanduser())
    return int(rec.seed) if rec is not None and isinstance(rec.seed, int) else int(fallback)


def model_of(cfg: Any, model: interp.InterpModel | None, hf_for: str | None = None,
             ) -> interp.InterpModel:
    """The model a run reads: ``model`` when given (its kind and layers checked against
    ``cfg``'s options, :func:`kit.model_facts.check_with`), else ``cfg.model`` opened at
    ``cfg.dtype`` (``cfg.allow_pickle``). ``hf_for``: the work that needs the ``hf`` backend
    (hooks on the HF modules), named in the one line that refuses another backend."""
    check_with(cfg, model)
    m = model if model is not None else open_model(
        cfg.model, dtype=getattr(cfg, "dtype", None),
        allow_pickle=getattr(cfg, "allow_pickle", False))
    if hf_for is not None and m.info.backend != "hf":
        raise ExperimentError(f"{hf_for} needs the 'hf' backend (hooks on the HF modules)")
    return m


def heads_model_of(cfg: Any, model: interp.InterpModel | None, why: str,
                   ) -> interp.InterpModel:
    """:func:`model_of` for a run that reads attention heads; a model without them (an LSTM,
    Mamba, an MLP) is one line ending in ``why`` (``" to verify"``)."""
    m = model_of(cfg, model)
    if m.modules.adapter.attention is None:
        raise ExperimentError(f"{m.info.name} has no attention heads{why}")
    return m
