"""``load``: one loader for Hub names, local directories and the embedded model.

* ``None`` / ``"default"`` / ``"smollm2-135m-instruct"``: the embedded SmolLM2;
  ``"gemma3-270m"`` / ``"gemma-3-270m"``: the embedded Gemma-3-270m (the optional extra
  ``gemma``). Offline; each cached conversion is verified against recorded checksums on every
  load (see :mod:`interp.embedded_catalogue` and :mod:`interp.embedded_model`).
* a local directory: ``from_pretrained(dir)`` (local files only).
* anything else is a Hub name: cached copies load offline; uncached ones download only when the
  Hub answers within seconds (see :mod:`interp.hub_access`).
* an ``nn.Module`` (or an :class:`InterpModel`) is wrapped as it is.

**Safetensors only** by default: weights that are pickle files only (``pytorch_model.bin``) are
refused with one line saying how to convert them, unless ``allow_pickle=True`` (then
transformers unpickles them with ``torch.load(weights_only=True)``); every local or cached
``*.safetensors`` file is checked against its header first, so a truncated one is a one-line
:class:`records.FileFault` naming it (see :mod:`interp.model_files`). A directory without
tokenizer files loads (it takes token ids); text prompts to it say that it has no tokenizer.
``device`` is checked by :func:`interp.check_device` before anything loads. Remote code is never
executed (``trust_remote_code`` stays off), and transformers' Hub safetensors conversion bot is
never called. Wind-tunnel runs are opened by ``analyses.open_model``, which attaches their task
(``interp`` knows no run layout).

Example (needs the Hub or a cached copy):
    >>> from bayesgeom import interp
    >>> m = interp.load("EleutherAI/pythia-410m", revision="step143000")  # doctest: +SKIP
"""

from __future__ import annotations

import contextlib
import logging
import os
import pickle
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import torch
from torch import nn

from ..records import FileFault
from .devices import check_device, check_device_map
from .embedded_catalogue import near_alias, resolve, typo_refusal
from .embedded_model import ensure_cached, marker
from .errors import InterpError, ModelNotAvailableError
from .hub_access import hub_load_kwargs, is_cached
from .model import InterpModel
from .model_files import (
    check_cached_hub_files,
    check_weight_files,
    damaged_fix,
    has_tokenizer_files,
    loading_problem,
    pickle_refusal,
)

DTYPES = {"float64": torch.float64, "fp64": torch.float64,
          "float32": torch.float32, "fp32": torch.float32, "float16": torch.float16,
          "fp16": torch.float16, "bfloat16": torch.bfloat16, "bf16": torch.bfloat16}
#: what transformers says when use_safetensors=True meets a Hub repo without safetensors
_NO_SAFETENSORS = "cannot be loaded with `safetensors`"
#: how transformers' loader words its own errors about a checkpoint's tensors
_LOADER_ERRORS = ("Error(s) in loading state_dict", "issues during automatic conversion")


def parse_dtype(dtype: str | torch.dtype | None) -> torch.dtype | str | None:
    """A torch dtype, ``"auto"`` or ``None`` (the checkpoint's default)."""
    if dtype is None or isinstance(dtype, torch.dtype) or dtype == "auto":
        return dtype
    if dtype not in DTYPES:
        raise InterpError(f"unknown dtype {dtype!r}; use one of {', '.join(DTYPES)} or 'auto'")
    return DTYPES[dtype]


def _looks_like_path(name: str) -> bool:
    return name.startswith(("/", "./", "../", "~")) or name in (".", "..")


def load(
    model: str | Path | nn.Module | InterpModel | None = None,
    *,
    dtype: str | torch.dtype | None = None,
    device: str | torch.device | None = None,
    device_map: str | dict[str, Any] | None = None,
    revision: str | None = None,
    attn_implementation: str | None = None,
    backend: str = "hf",
    allow_pickle: bool = False,
) -> InterpModel:
    """Load a causal LM for capture and interventions.

    ``dtype``: ``"float64"``, ``"float32"``, ``"bfloat16"``, ``"float16"``, ``"auto"`` or
    ``None`` (checkpoint default); ``device`` or ``device_map`` (e.g. ``"auto"``, to spread a
    model over devices, needs ``accelerate``); ``revision``: Hub branch/tag/commit;
    ``backend``: ``"hf"`` (forward hooks) or ``"transformer_lens"`` (``TransformerBridge``);
    ``allow_pickle``: also load pickle ``*.bin`` weights (through
    ``torch.load(weights_only=True)``) where a model has no safetensors.
    """
    dev = check_device(device) if device is not None else None
    if device_map is not None:
        check_device_map(device_map)
    if isinstance(model, InterpModel):
        return model
    if isinstance(model, nn.Module):
        return InterpModel(model.to(dev) if dev is not None else model, backend=backend)
    td = parse_dtype(dtype)
    if device is not None and device_map is not None:
        raise InterpError("pass either device or device_map, not both")
    kw: dict[str, Any] = {}
    if td is not None:
        kw["dtype"] = td
    if device_map is not None:
        kw["device_map"] = device_map
    if attn_implementation is not None:
        kw["attn_implementation"] = attn_implementation

    embedded = resolve(None if model is None else str(model))
    if embedded is not None:
        local = ensure_cached(model=embedded)
        meta = marker(local)
        hf, tok = _from_dir(local, {**kw, "use_safetensors": True})
        return _finish(hf, tok, dev, backend, name=embedded.name,
                       source="embedded", revision=f"{meta['package']}=={meta['package_version']}"
                       f" sha256:{meta['gguf_sha256'][:12]}", tl_source=str(local))
    name = str(model)
    path = Path(name).expanduser()
    if path.exists():
        if not path.is_dir():
            raise ModelNotAvailableError(f"{path} is a file; pass the model's directory")
        if not (path / "config.json").exists():
            raise ModelNotAvailableError(
                f"{path} holds no model (no config.json); a wind-tunnel run directory is opened "
                "with analyses.open_model (or any bayesgeom command's --model)")
        safe = check_weight_files(path, allow_pickle)
        hf, tok = _from_dir(path, {**kw, **_weights_kw(safe)})
        return _finish(hf, tok, dev, backend, name=str(path), source="local",
                       tl_source=str(path))
    if _looks_like_path(name):
        raise ModelNotAvailableError(f"no such model directory: {path}")
    near = near_alias(name)
    if near is not None and not is_cached(name, revision):
        raise typo_refusal(name, near)
    access = hub_load_kwargs(name, revision)
    check_cached_hub_files(name, revision)
    hf, tok = _from_dir(name, {**kw, **access, **_weights_kw(not allow_pickle),
                               **({"revision": revision} if revision else {})})
    return _finish(hf, tok, dev, backend, name=name, source="hub", revision=revision,
                   tl_source=name)


def _weights_kw(safetensors_only: bool) -> dict[str, Any]:
    """``from_pretrained`` kwargs: safetensors only, or pickle through ``weights_only``."""
    return {"use_safetensors": True} if safetensors_only else {"weights_only": True}


@contextlib.contextmanager
def _no_conversion_bot() -> Iterator[None]:
    """Keep transformers from asking the Hub's safetensors-conversion bot to convert a pickle
    repo (a network call and a pull request on someone else's repository)."""
    key = "DISABLE_SAFETENSORS_CONVERSION"
    old = os.environ.get(key)
    os.environ[key] = "1"
    try:
        yield
    finally:
        if old is None:
            os.environ.pop(key, None)
        else:
            os.environ[key] = old


class _NoLoadReport(logging.Filter):
    def filter(self, record: logging.LogRecord) -> bool:
        return "LOAD REPORT" not in str(record.msg)


@contextlib.contextmanager
def _quiet_load_report() -> Iterator[None]:
    """Hold back transformers' load report (a table of missing, unexpected and mismatched
    tensors, logged as a warning): :func:`model_files.loading_problem` says the same in one line
    and refuses the model. A filter, not a level: transformers reads its logger's level."""
    loggers = [logging.getLogger(n) for n in ("transformers.modeling_utils",
                                              "transformers.utils.loading_report")]
    quiet = _NoLoadReport()
    for lg in loggers:
        lg.addFilter(quiet)
    try:
        yield
    finally:
        for lg in loggers:
            lg.removeFilter(quiet)


def _first_line(e: BaseException) -> str:
    lines = str(e).strip().splitlines()
    return lines[0] if lines else type(e).__name__


def _from_dir(src: str | Path, kw: dict[str, Any]) -> tuple[nn.Module, Any | None]:
    from safetensors import SafetensorError
    from transformers import AutoModelForCausalLM, AutoTokenizer

    local_only = kw.get("local_files_only", isinstance(src, Path))
    try:
        with _no_conversion_bot(), _quiet_load_report():
            loaded: Any = AutoModelForCausalLM.from_pretrained(
                src, **{**kw, "local_files_only": local_only}, output_loading_info=True,
                ignore_mismatched_sizes=True)  # refused below, naming the tensors
        hf, info = loaded
    except SafetensorError as e:
        raise FileFault(f"cannot read the weights of {src}: {str(e)[:120]}; "
                        f"{damaged_fix(src)}") from e
    except pickle.UnpicklingError as e:
        raise ModelNotAvailableError(
            f"the pickle weights of {src} hold more than tensors, so torch.load(weights_only="
            f"True) refuses them ({_first_line(e)[:100]}); convert them to "
            "safetensors where you trust the file") from e
    except (OSError, ValueError) as e:
        if _NO_SAFETENSORS in str(e):
            raise pickle_refusal(src, ["pytorch_model.bin"]) from e
        raise ModelNotAvailableError(f"cannot load {src}: {_first_line(e)}") from e
    except RuntimeError as e:
        if not any(m in str(e) for m in _LOADER_ERRORS):
            raise  # not the weights (out of memory on the device ...)
        raise FileFault(f"cannot load the weights of {src}: {_first_line(e)[:160]}; "
                        f"{damaged_fix(src)}") from e
    problem = loading_problem(src, info)
    if problem is not None:
        raise FileFault(problem)
    if isinstance(src, Path) and not has_tokenizer_files(src):
        return hf, None  # token ids only (AutoTokenizer would build an empty-vocabulary one)
    tok_kw = {k: v for k, v in kw.items() if k == "revision"}
    try:
        tok = AutoTokenizer.from_pretrained(src, local_files_only=local_only, **tok_kw)
    except (OSError, ValueError, TypeError):
        tok = None  # a model without a tokenizer takes token ids
    if tok is not None and not len(tok) > 1:
        tok = None  # no vocabulary beyond a special token: not a tokenizer
    return hf, tok


def _finish(hf: nn.Module, tok: Any | None, device: torch.device | None, backend: str,
            **info: Any) -> InterpModel:
    if device is not None:
        hf = hf.to(device)
    return InterpModel(hf, tok, backend=backend, **info)
