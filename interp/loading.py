"""``load``: one loader for Hub names, local directories and the embedded model.

* ``None`` / ``"default"`` / ``"smollm2-135m-instruct"``: the embedded SmolLM2 (offline).
* a local directory: ``from_pretrained(dir)`` (local files only).
* anything else is a Hub name: cached copies load offline; uncached ones download only when the
  Hub answers within seconds (see :mod:`interp.hub_access`).
* an ``nn.Module`` (or an :class:`InterpModel`) is wrapped as it is.

Remote code is never executed (``trust_remote_code`` stays off). Wind-tunnel runs are opened by
``analyses.open_model``, which attaches their task (``interp`` knows no run layout).

Example (needs the Hub or a cached copy):
    >>> import interp
    >>> m = interp.load("EleutherAI/pythia-410m", revision="step143000")  # doctest: +SKIP
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import torch
from torch import nn

import interp.embedded_model as embedded_model
from interp.errors import InterpError, ModelNotAvailableError
from interp.hub_access import hub_load_kwargs
from interp.model import InterpModel

DTYPES = {"float32": torch.float32, "fp32": torch.float32, "float16": torch.float16,
          "fp16": torch.float16, "bfloat16": torch.bfloat16, "bf16": torch.bfloat16}


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
) -> InterpModel:
    """Load a causal LM for capture and interventions.

    ``dtype``: ``"float32"``, ``"bfloat16"``, ``"float16"``, ``"auto"`` or ``None`` (checkpoint
    default); ``device`` or ``device_map`` (e.g. ``"auto"``, to spread a model over devices,
    needs ``accelerate``); ``revision``: Hub branch/tag/commit; ``backend``: ``"hf"`` (forward
    hooks) or ``"transformer_lens"`` (``TransformerBridge``).
    """
    if isinstance(model, InterpModel):
        return model
    if isinstance(model, nn.Module):
        return InterpModel(model, backend=backend)
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

    name = str(model) if model is not None else embedded_model.EMBEDDED_NAME
    path = Path(name).expanduser()
    if model is None or name in embedded_model.ALIASES:
        local = embedded_model.ensure_cached()
        meta = embedded_model.marker()
        hf, tok = _from_dir(local, kw)
        return _finish(hf, tok, device, backend, name=embedded_model.EMBEDDED_NAME,
                       source="embedded", revision=f"{meta['package']}=={meta['package_version']}"
                       f" sha256:{meta['gguf_sha256'][:12]}", tl_source=str(local))
    if path.exists():
        if not path.is_dir():
            raise ModelNotAvailableError(f"{path} is a file; pass the model's directory")
        if not (path / "config.json").exists():
            raise ModelNotAvailableError(
                f"{path} holds no model (no config.json); a wind-tunnel run directory is opened "
                "with analyses.open_model (or any bayesgeom command's --model)")
        hf, tok = _from_dir(path, kw)
        return _finish(hf, tok, device, backend, name=str(path), source="local",
                       tl_source=str(path))
    if _looks_like_path(name):
        raise ModelNotAvailableError(f"no such model directory: {path}")
    access = hub_load_kwargs(name, revision)
    hf, tok = _from_dir(name, {**kw, **access, **({"revision": revision} if revision else {})})
    return _finish(hf, tok, device, backend, name=name, source="hub", revision=revision,
                   tl_source=name)


def _from_dir(src: str | Path, kw: dict[str, Any]) -> tuple[nn.Module, Any | None]:
    from transformers import AutoModelForCausalLM, AutoTokenizer

    local_only = kw.get("local_files_only", isinstance(src, Path))
    try:
        hf = AutoModelForCausalLM.from_pretrained(
            src, **{**kw, "local_files_only": local_only})
    except (OSError, ValueError) as e:
        raise ModelNotAvailableError(f"cannot load {src}: {e}") from e
    tok_kw = {k: v for k, v in kw.items() if k == "revision"}
    try:
        tok = AutoTokenizer.from_pretrained(src, local_files_only=local_only, **tok_kw)
    except (OSError, ValueError, TypeError):
        tok = None  # a model without a tokenizer takes token ids
    return hf, tok


def _finish(hf: nn.Module, tok: Any | None, device: str | torch.device | None, backend: str,
            **info: Any) -> InterpModel:
    if device is not None:
        hf = hf.to(device)
    return InterpModel(hf, tok, backend=backend, **info)
