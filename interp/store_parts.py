"""Activation stores captured in parts by independent workers, merged exactly.

Two kinds of part, for the two ways a capture is kept:

* **on disk**: each worker runs :func:`interp.capture` with ``part=(k, n)`` into its own
  folder (``OUT/parts/part-<k>-of-<n>``, held by that worker and resumable like any store); its
  shards hold exactly the rows a one-process capture's shards hold (same prompt ranges, same
  batches, global prompt indices). :func:`merge_parts` links them into ``OUT/shards`` under
  their own names, checks each against its recorded SHA-256 and writes ``OUT``'s manifest,
  then removes the parts: the result is the store one process would have written.
* **in memory** (a few hundred prompts, as a geometry run keeps): each worker captures its
  slice of the prompts and writes it as one safetensors file (:func:`save_rows`, the store's
  manifest in its metadata); :func:`concat_stores` concatenates the parts' rows in prompt
  order, prompt indices shifted to the whole set's and attention rows (``attn.L.pattern``,
  [H, W], W = the longest prompt captured) zero-padded to the widest part.

Example:
    >>> import torch
    >>> def part(first, n):
    ...     rows = {"prompt_index": torch.arange(n), "position": torch.zeros(n, dtype=torch.long),
    ...             "token_id": torch.zeros(n, dtype=torch.long), "entropy_bits": torch.ones(n),
    ...             "attn.0.v": torch.full((n, 2), float(first))}
    ...     return ActivationStore({"sites": ["attn.0.v"], "n_prompts": n,
    ...                             "identity": {"n_prompts": n}}, tensors=rows)
    >>> merged = concat_stores([part(0, 2), part(2, 1)])
    >>> merged.prompt_index.tolist(), merged["attn.0.v"][:, 0].tolist(), len(merged)
    ([0, 1, 2], [0.0, 0.0, 2.0], 3)
"""

from __future__ import annotations

import json
import os
import shutil
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import torch
from safetensors import safe_open
from safetensors.torch import save

from ..records import atomic_write_bytes, os_errors, write_json
from .activation_store import MANIFEST, PARTS, PROMPTS, ActivationStore, check_shard, read_manifest
from .errors import StoreError, StoreMismatchError

#: the manifest keys of a part that are not the whole capture's
PART_KEYS = ("part", "part_shards")


def part_dir(out: str | Path, k: int, n_parts: int) -> Path:
    """The folder of worker part ``k`` of ``n_parts`` of the store ``out``."""
    return Path(out) / PARTS / f"part-{k:03d}-of-{n_parts:03d}"


def merge_parts(out: str | Path, parts: Sequence[str | Path],
                extra: dict[str, Any] | None = None) -> ActivationStore:
    """Merge the finished disk parts ``parts`` (in part order) into the store ``out`` (module
    doc); ``extra``: further manifest entries (who ran each part). Refuses, in one line, a part
    that is unfinished, holds another capture, or whose shard fails its checksum."""
    out = Path(out)
    manifests = [read_manifest(Path(p)) for p in parts]
    first = manifests[0]
    want = {k: v for k, v in first["identity"].items() if k != "part"}
    entries: list[dict[str, Any]] = []
    for p, m in zip(parts, manifests, strict=True):
        ident = {k: v for k, v in m.get("identity", {}).items() if k != "part"}
        if ident != want:
            raise StoreMismatchError(f"{p} holds another capture than {parts[0]}; capture again "
                                     "with --restart")
        if not m.get("complete"):
            raise StoreError(f"{p} is unfinished ({len(m['shards'])} of {m.get('n_shards')} "
                             "shards); rerun the capture to finish it")
        for entry in m["shards"]:
            _link(Path(p) / entry["file"], out / entry["file"])
            why = check_shard(out, entry, full=True)
            if why is not None:
                raise StoreError(f"{why}; rerun the capture (the part is captured again)")
            entries.append(entry)
    entries.sort(key=lambda e: e["index"])
    if [e["index"] for e in entries] != list(range(len(entries))):
        raise StoreError(f"the parts of {out} do not tile its shards; capture again with "
                         "--restart")
    _link(Path(parts[0]) / PROMPTS, out / PROMPTS)
    manifest = {k: v for k, v in first.items() if k not in PART_KEYS}
    manifest.update(identity=want, n_shards=len(entries), shards=entries, complete=True,
                    **(extra or {}))
    write_json(out / MANIFEST, manifest)
    with os_errors(out / PARTS):
        shutil.rmtree(out / PARTS, ignore_errors=True)
    return ActivationStore.open(out)


def _link(src: Path, dst: Path) -> None:
    """``dst`` as a hard link to ``src`` (a copy where links are not possible); an existing
    ``dst`` is replaced, and a missing ``src`` leaves ``dst`` as it is (merged before)."""
    if not src.exists():
        return
    with os_errors(dst):
        dst.parent.mkdir(parents=True, exist_ok=True)
        tmp = dst.with_name(f".{dst.name}.link")
        tmp.unlink(missing_ok=True)
        try:
            os.link(src, tmp)
        except OSError:
            shutil.copyfile(src, tmp)
        os.replace(tmp, dst)


def save_rows(store: ActivationStore, path: str | Path) -> Path:
    """An in-memory store's rows and manifest as one safetensors file (atomic)."""
    tensors = {k: t.contiguous() for s in store.iter_shards() for k, t in s.items()}
    meta = {"manifest": json.dumps(store.manifest, default=str)}
    return atomic_write_bytes(path, save(tensors, metadata=meta))


def load_rows(path: str | Path) -> ActivationStore:
    """The in-memory store :func:`save_rows` wrote to ``path``."""
    with safe_open(str(path), framework="pt") as f:
        manifest = json.loads((f.metadata() or {})["manifest"])
        tensors = {k: f.get_tensor(k) for k in f.keys()}  # noqa: SIM118
    return ActivationStore(manifest, tensors=tensors)


def concat_stores(stores: Sequence[ActivationStore]) -> ActivationStore:
    """The in-memory stores of consecutive prompt slices as one (module doc): rows in order,
    ``prompt_index`` shifted by the prompts before each, attention rows zero-padded to the
    widest. The manifest is the first part's, counting every prompt."""
    if not stores:
        raise StoreError("no parts to concatenate")
    names = [*stores[0].sites, "prompt_index", "position", "token_id", "entropy_bits"]
    out: dict[str, torch.Tensor] = {}
    for name in names:
        parts, first = [], 0
        for s in stores:
            t = s[name]
            parts.append(t + first if name == "prompt_index" else t)
            first += int(s.manifest["n_prompts"])
        if name.endswith(".pattern"):  # attention rows [R, H, W]: keys zero-padded to W
            width = max(t.shape[-1] for t in parts)
            parts = [torch.nn.functional.pad(t, (0, width - t.shape[-1])) for t in parts]
        out[name] = torch.cat(parts)
    n = sum(int(s.manifest["n_prompts"]) for s in stores)
    manifest = {**stores[0].manifest, "n_prompts": n,
                "identity": {**stores[0].manifest.get("identity", {}), "n_prompts": n},
                "row_shapes": {k: list(v.shape[1:]) for k, v in out.items()
                               if k in stores[0].sites}}
    return ActivationStore(manifest, tensors=out)
