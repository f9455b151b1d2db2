"""Activation stores: captured rows (one per prompt × captured position), in memory or on disk.

On disk (readable with ``safetensors`` and ``pyarrow`` alone)::

    DIR/manifest.json          format, model, sites, per-row shapes, positions, prompts hash,
                               shard list, run manifest (versions, seed, command); "complete"
    DIR/prompts.parquet        prompt_index, text (null for token prompts), n_tokens
    DIR/shards/shard-00000.safetensors
                               one tensor per site, named by the site ("resid_post.3",
                               "attn.29.v"), [rows, *row_shape], plus the row index:
                               prompt_index, position (int64), token_id (int64: the token at
                               that position), entropy_bits (float32: next-token entropy there,
                               over the manifest's "entropy_over": "vocabulary", or "hypothesis
                               slice" -- ids slice(*entropy_ids) -- for a wind tunnel,
                               or "none": NaN, captured with entropy=False)

Shards hold consecutive prompt ranges (``prompts_per_shard`` prompts each) and are written
atomically; the manifest is rewritten after each with the shard's size and SHA-256, so an
interrupted capture resumes by skipping the shards it lists -- each re-hashed first: a missing,
truncated or altered shard is captured again (a line on stderr says so), never reused.
:func:`interp.capture` holds the directory (:func:`records.hold`, an OS-level lock) for the
whole capture, so a second process pointed at it gets a one-line ``RunBusyError`` at once.

Opening a damaged store -- a manifest that is not JSON or lacks its fields, a listed shard that
is missing, truncated (checked against its size and its safetensors header) or lacks a site, an
unreadable ``prompts.parquet`` -- is one :class:`StoreError` line naming the file (a fault, exit
status 1). A folder that is not a store, or holds another capture, is a
:class:`StoreMismatchError` (a usage error). Writes go through :mod:`records`, so a full disk or
a read-only folder is one ``FileFault`` line naming the file.
"""

from __future__ import annotations

import hashlib
import shutil
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pandas as pd
import torch
from safetensors import SafetensorError, safe_open
from safetensors.torch import save

from ..records import (
    FileFault,
    atomic_write_bytes,
    check_safetensors,
    file_sha256,
    os_errors,
    read_json,
    read_table,
    write_json,
    write_table,
)
from ..records.run_dir import LOCK, OWNER, RECORD
from .errors import StoreError, StoreMismatchError, UnknownSiteError
from .sites import parse_site

FORMAT = "bayesgeom.activations/1"
INDEX_FIELDS = ("prompt_index", "position", "token_id", "entropy_bits")
MANIFEST = "manifest.json"
PROMPTS = "prompts.parquet"
SHARDS = "shards"
#: where the workers of a data-parallel capture keep their parts until they are merged
PARTS = "parts"
#: what to do about a damaged store
DAMAGED = "the store is damaged; capture it again into a new --out (or delete the folder)"


def read_manifest(path: Path) -> dict[str, Any]:
    """The manifest of the store in ``path``; a corrupt or wrong-shaped one is a StoreError
    naming it, a folder without one a StoreMismatchError."""
    m = path / MANIFEST
    if not m.is_file():
        raise StoreMismatchError(f"{path} is not an activation store (no {MANIFEST})")
    try:
        manifest = read_json(m, expect=dict, keys=("format", "shards"), fix=DAMAGED)
    except FileFault as e:
        raise StoreError(str(e)) from None
    if manifest.get("format") != FORMAT:
        raise StoreMismatchError(f"{path}: unknown store format {manifest.get('format')!r} in "
                                 f"{m}; choose another --out")
    shards = manifest["shards"]
    if not isinstance(shards, list) or not all(
            isinstance(sh, dict) and isinstance(sh.get("file"), str) and "rows" in sh
            and "index" in sh for sh in shards):
        raise StoreError(f"{m} has a malformed shard list; {DAMAGED}")
    return manifest


def check_shard(path: Path, entry: dict[str, Any], full: bool = False) -> str | None:
    """Why the shard file ``entry`` (from a manifest) is unusable, or None: missing, not the
    size recorded, not a complete safetensors file, or (``full``) not its recorded SHA-256."""
    p = path / entry["file"]
    if not p.is_file():
        return f"{p} is missing"
    size = entry.get("bytes")
    if size is not None and p.stat().st_size != size:
        return f"{p} has {p.stat().st_size} bytes, {size} were written (truncated or altered)"
    try:
        check_safetensors(p, fix=DAMAGED)
    except FileFault as e:
        return str(e).removesuffix(f"; {DAMAGED}")
    if full and entry.get("sha256") is not None and file_sha256(p) != entry["sha256"]:
        return f"{p} does not match its recorded checksum (altered or damaged)"
    return None


class ActivationStore:
    """Rows of captured activations. ``store[site]`` is a tensor [rows, *row_shape];
    ``store.entropy_bits``, ``store.prompt_index``, ``store.position``, ``store.token_id`` [rows]
    index the rows. Disk stores read shards lazily (``iter_shards`` streams them)."""

    def __init__(self, manifest: dict[str, Any], tensors: dict[str, torch.Tensor] | None = None,
                 path: Path | None = None, prompts: pd.DataFrame | None = None):
        self.manifest = manifest
        self.path = path
        self._tensors = tensors
        self._prompts = prompts

    @classmethod
    def open(cls, path: str | Path) -> ActivationStore:
        """The store in ``path``, its manifest and every listed shard checked (sizes and
        safetensors headers; no full re-hash): a damaged one is a :class:`StoreError`."""
        path = Path(path)
        manifest = read_manifest(path)
        for entry in manifest["shards"]:
            why = check_shard(path, entry)
            if why is not None:
                raise StoreError(f"{why}; {DAMAGED}")
        if "sites" not in manifest:
            raise StoreError(f"{path / MANIFEST} names no sites; {DAMAGED}")
        return cls(manifest, path=path)

    # ------------------------------------------------------------------ description
    @property
    def sites(self) -> list[str]:
        return list(self.manifest["sites"])

    @property
    def complete(self) -> bool:
        return bool(self.manifest.get("complete", False))

    def __len__(self) -> int:
        if self._tensors is not None:
            return int(self._tensors["prompt_index"].shape[0])
        return sum(s["rows"] for s in self.manifest["shards"])

    def __repr__(self) -> str:
        where = str(self.path) if self.path else "memory"
        return f"ActivationStore({len(self)} rows, sites={self.sites}, {where})"

    @property
    def prompts(self) -> pd.DataFrame:
        """prompt_index, text, n_tokens per prompt."""
        if self._prompts is None:
            if self.path is None:
                raise StoreError("this store has no prompt table")
            try:
                self._prompts = read_table(self.path / PROMPTS, columns=("prompt_index",),
                                           fix=DAMAGED)
            except FileFault as e:
                raise StoreError(str(e)) from None
        return self._prompts

    # ------------------------------------------------------------------ reading
    def shard_paths(self) -> list[Path]:
        if self.path is None:
            return []
        return [self.path / s["file"] for s in self.manifest["shards"]]

    def iter_shards(self, names: list[str] | None = None) -> Iterator[dict[str, torch.Tensor]]:
        """Yield each shard's tensors (``names``: which sites / index fields; default all)."""
        keys = names or [*self.sites, *INDEX_FIELDS]
        if self._tensors is not None:
            yield {k: self._tensors[k] for k in keys}
            return
        for p in self.shard_paths():
            try:
                with safe_open(str(p), framework="pt") as f:
                    have = set(f.keys())
                    missing = [k for k in keys if k not in have]
                    if missing:
                        raise StoreError(f"{p} lacks {', '.join(missing)}; {DAMAGED}")
                    shard = {k: f.get_tensor(k) for k in keys}
            except (SafetensorError, OSError) as e:
                raise StoreError(f"{p} cannot be read ({str(e)[:80]}); {DAMAGED}") from None
            yield shard

    def resolve(self, name: str) -> str:
        """The stored name of ``name`` (negative layers count from the end: ``attn.-1.v``)."""
        if name in self.sites or name in INDEX_FIELDS:
            return name
        n_layers = self.manifest.get("n_layers")
        if n_layers is not None:
            try:
                canonical = parse_site(name, int(n_layers)).name
            except UnknownSiteError:
                canonical = None
            if canonical in self.sites:
                return canonical
        raise KeyError(f"{name!r} is not in this store; it holds {', '.join(self.sites)}")

    def __getitem__(self, name: str) -> torch.Tensor:
        name = self.resolve(name)
        if self._tensors is not None:
            return self._tensors[name]
        parts = [s[name] for s in self.iter_shards([name])]
        if not parts:
            raise StoreError(f"{self.path}: no shards written yet")
        return torch.cat(parts)

    @property
    def entropy_bits(self) -> torch.Tensor:
        """Next-token entropy (bits) [rows], over :attr:`entropy_over`."""
        return self["entropy_bits"]

    @property
    def entropy_over(self) -> str:
        """What :attr:`entropy_bits` is over: ``"vocabulary"``, or ``"hypothesis slice"`` (a
        wind tunnel's hypothesis tokens, ``slice(*manifest["entropy_ids"])``), or ``"none"``
        (NaN: captured with ``entropy=False``). Stores written before this was recorded took it
        over the vocabulary."""
        return str(self.manifest.get("entropy_over", "vocabulary"))

    @property
    def prompt_index(self) -> torch.Tensor:
        return self["prompt_index"]

    @property
    def position(self) -> torch.Tensor:
        return self["position"]

    @property
    def token_id(self) -> torch.Tensor:
        return self["token_id"]


def check_store_dir(path: str | Path) -> None:
    """Whether ``path`` can hold a capture, read without writing (cheap: the ``capture`` command
    calls it before loading a model): new, empty or an activation store; else a one-line
    :class:`StoreMismatchError` (another command's run, or a folder of other files)."""
    path = Path(path)
    _refuse_other_runs(path)
    if path.is_dir() and not (path / MANIFEST).exists():
        others = [p.name for p in path.iterdir() if p.name not in (LOCK, OWNER, PARTS)]
        if others:
            raise StoreMismatchError(f"{path} is not empty and is not an activation store "
                                     f"(it holds {', '.join(sorted(others)[:3])}); choose "
                                     "another --out")


def _refuse_other_runs(path: Path) -> None:
    """A folder claimed by another bayesgeom command (its ``run.json``) is not a store."""
    if (path / RECORD).is_file():
        try:
            kind = read_json(path / RECORD, expect=dict).get("experiment") or "other"
        except FileFault:
            kind = "other"
        raise StoreMismatchError(f"{path} holds a bayesgeom {kind} run, not an activation "
                                 "store; choose another --out")
    m = path / MANIFEST
    if m.is_file():
        try:
            fmt = read_json(m, expect=dict).get("format")
        except FileFault:
            return  # a damaged manifest: read_manifest says so
        if fmt is None:
            raise StoreMismatchError(f"{path} is not an activation store ({m} is another "
                                     "kind of manifest); choose another --out")


def _clear_store(path: Path) -> None:
    """Remove a store's files (manifest, prompt table, shards) for ``--restart``."""
    with os_errors(path):
        for name in (MANIFEST, PROMPTS):
            (path / name).unlink(missing_ok=True)
        shutil.rmtree(path / SHARDS, ignore_errors=True)


class ShardWriter:
    """Writes a disk store shard by shard; on an existing directory, checks that it holds the
    same capture (``identity``) and reports which shards are already done."""

    def __init__(self, path: Path, identity: dict[str, Any], n_shards: int,
                 prompts: pd.DataFrame, restart: bool = False,
                 part_shards: tuple[int, int] | None = None):
        self.path = path
        _refuse_other_runs(path)
        if (path / MANIFEST).exists():
            old = read_manifest(path)
            diff = [k for k, v in identity.items() if old.get("identity", {}).get(k) != v]
            if diff and not restart:
                raise StoreMismatchError(
                    f"{path} holds a different capture (differs in: {', '.join(diff)}); "
                    "choose another --out, or pass --restart to replace it")
            if restart:
                print(f"bayesgeom: {path} held an earlier capture; restarting it in place",
                      file=sys.stderr, flush=True)
                _clear_store(path)
        if (path / MANIFEST).exists():
            self.manifest = old
            self.manifest["shards"] = [s for s in old["shards"] if self._reusable(s)]
        else:
            check_store_dir(path)
            self.manifest = {"format": FORMAT, "complete": False, "identity": identity,
                             "sites": identity["sites"], "positions": identity["positions"],
                             "n_shards": n_shards, "shards": []}
            if part_shards is not None:  # one worker's part: shard indices [a, b)
                self.manifest["part_shards"] = list(part_shards)
            write_table(path / PROMPTS, prompts)
            write_json(path / MANIFEST, self.manifest)

    def _reusable(self, entry: dict[str, Any]) -> bool:
        """Whether a finished shard can be skipped on resume (present, complete, its recorded
        SHA-256); a damaged one is said on stderr and captured again."""
        why = check_shard(self.path, entry, full=True)
        if why is not None and (self.path / entry["file"]).exists():
            print(f"bayesgeom: {why}; capturing it again", file=sys.stderr, flush=True)
        return why is None

    def done(self, k: int) -> bool:
        return any(s["index"] == k for s in self.manifest["shards"])

    def write(self, k: int, prompt_range: tuple[int, int], tensors: dict[str, torch.Tensor],
              row_shapes: dict[str, list[int]]) -> None:
        rel = f"{SHARDS}/shard-{k:05d}.safetensors"
        lo, hi = prompt_range
        meta = {"format": FORMAT, "shard": str(k), "prompts": f"{lo}:{hi}"}
        blob = save({n: t.contiguous() for n, t in tensors.items()}, metadata=meta)
        atomic_write_bytes(self.path / rel, blob)
        entry = {"index": k, "file": rel, "prompts": list(prompt_range),
                 "rows": int(tensors["prompt_index"].shape[0]), "bytes": len(blob),
                 "sha256": hashlib.sha256(blob).hexdigest()}
        self.manifest["shards"] = sorted(
            [*[s for s in self.manifest["shards"] if s["index"] != k], entry],
            key=lambda s: s["index"])
        self.manifest["row_shapes"] = row_shapes
        write_json(self.path / MANIFEST, self.manifest)

    def finish(self, extra: dict[str, Any]) -> dict[str, Any]:
        self.manifest.update(extra)
        self.manifest["complete"] = len(self.manifest["shards"]) == self.manifest["n_shards"]
        write_json(self.path / MANIFEST, self.manifest)
        return self.manifest
