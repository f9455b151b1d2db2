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
                               slice" -- ids slice(*entropy_ids) -- for a wind tunnel)

Shards hold consecutive prompt ranges (``prompts_per_shard`` prompts each) and are written
atomically; the manifest is rewritten after each, so an interrupted capture resumes by skipping
the shards it lists.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pandas as pd
import torch
from safetensors import safe_open
from safetensors.torch import save_file

from interp.errors import StoreError, UnknownSiteError
from interp.sites import parse_site
from records import atomic_write, write_json, write_table

FORMAT = "bayesgeom.activations/1"
INDEX_FIELDS = ("prompt_index", "position", "token_id", "entropy_bits")
MANIFEST = "manifest.json"


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
        path = Path(path)
        if not (path / MANIFEST).exists():
            raise StoreError(f"{path} is not an activation store (no {MANIFEST})")
        import json

        manifest = json.loads((path / MANIFEST).read_text())
        if manifest.get("format") != FORMAT:
            raise StoreError(f"{path}: unknown store format {manifest.get('format')!r}")
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
            self._prompts = pd.read_parquet(self.path / "prompts.parquet")
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
            with safe_open(str(p), framework="pt") as f:
                yield {k: f.get_tensor(k) for k in keys}

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
        wind tunnel's hypothesis tokens, ``slice(*manifest["entropy_ids"])``). Stores written
        before this was recorded took it over the vocabulary."""
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


class ShardWriter:
    """Writes a disk store shard by shard; on an existing directory, checks that it holds the
    same capture (``identity``) and reports which shards are already done."""

    def __init__(self, path: Path, identity: dict[str, Any], n_shards: int,
                 prompts: pd.DataFrame):
        self.path = path
        m = path / MANIFEST
        if m.exists():
            import json

            old = json.loads(m.read_text())
            if old.get("format") != FORMAT:
                raise StoreError(f"{path} holds something else ({MANIFEST} of another format)")
            diff = [k for k, v in identity.items() if old.get("identity", {}).get(k) != v]
            if diff:
                raise StoreError(
                    f"{path} holds a different capture (differs in: {', '.join(diff)}); "
                    "choose another --out directory or delete this one"
                )
            self.manifest = old
            self.manifest["shards"] = [
                s for s in old["shards"] if (path / s["file"]).exists()
            ]
        else:
            if path.exists() and any(path.iterdir()):
                raise StoreError(f"{path} is not empty and is not an activation store")
            self.manifest = {"format": FORMAT, "complete": False, "identity": identity,
                             "sites": identity["sites"], "positions": identity["positions"],
                             "n_shards": n_shards, "shards": []}
            write_table(path / "prompts.parquet", prompts)
            write_json(path / MANIFEST, self.manifest)

    def done(self, k: int) -> bool:
        return any(s["index"] == k for s in self.manifest["shards"])

    def write(self, k: int, prompt_range: tuple[int, int], tensors: dict[str, torch.Tensor],
              row_shapes: dict[str, list[int]]) -> None:
        rel = f"shards/shard-{k:05d}.safetensors"
        lo, hi = prompt_range
        meta = {"format": FORMAT, "shard": str(k), "prompts": f"{lo}:{hi}"}
        data = {n: t.contiguous() for n, t in tensors.items()}
        atomic_write(self.path / rel, lambda p: save_file(data, str(p), metadata=meta))
        self.manifest["shards"] = sorted(
            [*self.manifest["shards"], {"index": k, "file": rel, "prompts": list(prompt_range),
                                        "rows": int(tensors["prompt_index"].shape[0])}],
            key=lambda s: s["index"])
        self.manifest["row_shapes"] = row_shapes
        write_json(self.path / MANIFEST, self.manifest)

    def finish(self, extra: dict[str, Any]) -> dict[str, Any]:
        self.manifest.update(extra)
        self.manifest["complete"] = len(self.manifest["shards"]) == self.manifest["n_shards"]
        write_json(self.path / MANIFEST, self.manifest)
        return self.manifest
