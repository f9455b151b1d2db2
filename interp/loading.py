"""``load``: one loader for Hub names, local directories, wind-tunnel runs and the embedded model.

* ``None`` / ``"default"`` / ``"smollm2-135m-instruct"``: the embedded SmolLM2 (offline).
* a wind-tunnel run directory (``run.json``) or model directory (``windtunnel.json`` or a
  bayesgeom config): loaded through ``windtunnel``, with its task attached.
* any other local directory: ``from_pretrained(dir)`` (local files only).
* anything else is a Hub name: cached copies load offline; uncached ones download only when the
  Hub answers within seconds (see :mod:`interp.hub_access`).

Remote code is never executed (``trust_remote_code`` stays off).
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import torch
from torch import nn

from interp import embedded_model
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


def _is_windtunnel_model_dir(path: Path) -> bool:
    cfg = path / "config.json"
    if not cfg.exists():
        return False
    try:
        c = json.loads(cfg.read_text())
    except json.JSONDecodeError:
        return False
    return "bayesgeom_preset" in c or c.get("model_type") == "bayesgeom_mlp"


def _windtunnel(path: Path) -> tuple[nn.Module, Any | None]:
    from windtunnel.checkpoint import CheckpointError, load_model
    from windtunnel.task import task_from_config
    from windtunnel.training import RunDirError, load_run

    try:
        if (path / "run.json").exists() or (path / "windtunnel.json").exists():
            run = load_run(path)
            return run.model, run.task
        model = load_model(path)
    except (CheckpointError, RunDirError) as e:
        raise ModelNotAvailableError(f"cannot load wind-tunnel model {path}: {e}") from e
    run_json = path.parent.parent / "run.json"  # <run>/checkpoints/step-N
    task = None
    if run_json.exists():
        task = task_from_config(json.loads(run_json.read_text())["task"])
    return model, task


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
        if (path / "run.json").exists() or (path / "windtunnel.json").exists() \
                or _is_windtunnel_model_dir(path):
            hf, task = _windtunnel(path)
            if isinstance(td, torch.dtype):
                hf = hf.to(td)
            return _finish(hf, None, device, backend, name=str(path), source="windtunnel",
                           task=task, tl_source=str(path))
        if not (path / "config.json").exists():
            raise ModelNotAvailableError(
                f"{path} holds no model (no config.json, run.json or windtunnel.json)")
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
