"""Stores captured in parts and merged: on disk (``capture(part=...)`` + ``merge_parts``) the
shards are those of the whole capture; in memory (``save_rows``, ``concat_stores``) the rows
are the whole capture's, attention rows padded to the widest part."""

from __future__ import annotations

import json

import pytest
import torch

from bayesgeom.interp import capture
from bayesgeom.interp.activation_store import ActivationStore
from bayesgeom.interp.errors import InterpError, StoreError
from bayesgeom.interp.store_parts import concat_stores, load_rows, merge_parts, part_dir, save_rows

SITES = ["attn.1.v", "attn.0.pattern", "resid_post.0"]
INDEX = ("prompt_index", "position", "token_id", "entropy_bits")


def _same_rows(a: ActivationStore, b: ActivationStore) -> None:
    assert a.sites == b.sites and len(a) == len(b)
    for k in (*a.sites, *INDEX):
        torch.testing.assert_close(a[k], b[k], rtol=1e-5, atol=1e-6, msg=k)


def test_disk_parts_merge_into_the_whole_capture(llama, prompts, tmp_path):
    many = prompts * 2  # 8 prompts, shards of 2: parts of 2 shards each
    whole = capture(llama, many, SITES, "all", batch_size=2, out=tmp_path / "whole",
                    prompts_per_shard=2, progress=False)
    out = tmp_path / "merged"
    dirs = [part_dir(out, k, 2) for k in range(2)]
    for k, d in enumerate(dirs):
        part = capture(llama, many, SITES, "all", batch_size=2, out=d, prompts_per_shard=2,
                       progress=False, part=(k, 2))
        assert [s["index"] for s in part.manifest["shards"]] == [2 * k, 2 * k + 1]
    merged = merge_parts(out, dirs, extra={"workers": ["cpu", "cpu"]})
    _same_rows(whole, merged)
    assert merged.complete and merged.manifest["n_shards"] == 4
    assert merged.manifest["identity"] == whole.manifest["identity"]
    for a, b in zip(whole.iter_shards(), merged.iter_shards(), strict=True):
        assert all(torch.equal(a[k], b[k]) for k in a)  # the same batches: the same rows
    assert not (out / "parts").exists()
    reopened = json.loads((out / "manifest.json").read_text())
    assert reopened["workers"] == ["cpu", "cpu"] and "part" not in reopened["identity"]


def test_an_unfinished_or_damaged_part_is_not_merged(llama, prompts, tmp_path):
    out = tmp_path / "store"
    dirs = [part_dir(out, k, 2) for k in range(2)]
    capture(llama, prompts, SITES, "last", out=dirs[0], prompts_per_shard=1, progress=False,
            part=(0, 2))
    with pytest.raises(Exception, match="not an activation store"):
        merge_parts(out, dirs)  # part 1 was never captured
    capture(llama, prompts, SITES, "last", out=dirs[1], prompts_per_shard=1, progress=False,
            part=(1, 2))
    shard = dirs[1] / json.loads((dirs[1] / "manifest.json").read_text())["shards"][0]["file"]
    shard.write_bytes(shard.read_bytes()[:-8] + b"\0" * 8)
    with pytest.raises(StoreError, match="checksum"):
        merge_parts(out, dirs)


def test_a_part_needs_a_folder_and_a_place(llama, prompts, tmp_path):
    with pytest.raises(InterpError, match="needs out"):
        capture(llama, prompts, SITES, part=(0, 2), progress=False)
    with pytest.raises(InterpError, match="0 <= k < n"):
        capture(llama, prompts, SITES, out=tmp_path / "a", part=(2, 2), progress=False)
    with pytest.raises(InterpError, match="only 1 shard"):
        capture(llama, prompts, SITES, out=tmp_path / "b", prompts_per_shard=4, part=(1, 2),
                progress=False)


def test_memory_parts_concatenate_into_the_whole_capture(llama, prompts, tmp_path):
    ordered = sorted(prompts, key=len)
    whole = capture(llama, ordered, SITES, "last", batch_size=2, progress=False)
    parts = [capture(llama, ordered[lo:hi], SITES, "last", batch_size=2, progress=False)
             for lo, hi in ((0, 2), (2, 4))]
    assert parts[0]["attn.0.pattern"].shape[-1] < whole["attn.0.pattern"].shape[-1]
    saved = [load_rows(save_rows(p, tmp_path / f"p{i}.safetensors"))
             for i, p in enumerate(parts)]
    merged = concat_stores(saved)
    _same_rows(whole, merged)
    assert merged.manifest["n_prompts"] == 4
