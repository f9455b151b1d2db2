"""Capture: requested sites only, no retained views, entropy, positions, streaming to disk
(readable without bayesgeom), resume, and the errors for bad input."""

from __future__ import annotations

import json
import math
import os
import subprocess
import sys
import textwrap
import time

import pytest
import torch

from bayesgeom import interp
from bayesgeom.interp import capture
from bayesgeom.interp.activation_store import ActivationStore, ShardWriter
from bayesgeom.interp.errors import (
    NonFiniteActivationError,
    PromptError,
    StoreError,
    UnknownSiteError,
)


def _hooks(model: torch.nn.Module) -> int:
    return sum(len(m._forward_hooks) + len(m._forward_pre_hooks) for m in model.modules())


def test_only_requested_sites_are_kept_and_own_their_memory(llama, prompts):
    before = _hooks(llama.hf)
    store = capture(llama, prompts, ["resid_post.-1", "attn.-1.v", "attn.0.pattern"], "last",
                    progress=False)
    assert store.sites == ["resid_post.1", "attn.1.v", "attn.0.pattern"]
    assert set(store.iter_shards().__next__()) == {*store.sites, "prompt_index", "position",
                                                   "token_id", "entropy_bits"}
    assert _hooks(llama.hf) == before
    for s in store.sites:
        t = store[s]
        assert t.untyped_storage().nbytes() == t.numel() * t.element_size(), f"{s} is a view"
    lengths = [len(t) for t in llama.encode(prompts)[0]]
    assert store["attn.1.v"].shape == (len(prompts), 2, 8)  # GQA: 2 kv heads of 8
    assert store["attn.0.pattern"].shape == (len(prompts), 4, max(lengths))
    assert store.position.tolist() == [n - 1 for n in lengths]
    # The last-token pattern over the prompt's own tokens sums to 1; keys past it are zero.
    pat = store["attn.0.pattern"]
    torch.testing.assert_close(pat.sum(-1), torch.ones(len(prompts), 4))
    for i, n in enumerate(lengths):
        assert torch.count_nonzero(pat[i, :, n:]) == 0


def test_entropy_bits_match_the_logits(llama, prompts):
    store = capture(llama, prompts, ["logits"], "all", progress=False)
    p = torch.softmax(store["logits"].double(), -1)
    h = -(p * p.log()).sum(-1) / math.log(2)
    torch.testing.assert_close(store.entropy_bits.double(), h, atol=1e-4, rtol=0)
    toks = llama.encode(prompts)[0]
    assert store.token_id.tolist() == [t for seq in toks for t in seq]
    assert store.prompt_index.tolist() == [i for i, seq in enumerate(toks) for _ in seq]


def test_index_positions_and_geometry(llama, prompts):
    store = capture(llama, prompts, ["attn.0.q", "attn.0.k"], [0, -1], progress=False)
    assert len(store) == 2 * len(prompts)
    lengths = [len(t) for t in llama.encode(prompts)[0]]
    assert store.position.tolist() == [p for n in lengths for p in (0, n - 1)]
    assert store["attn.0.q"].shape[1:] == (4, 8) and store["attn.0.k"].shape[1:] == (2, 8)
    assert llama.geometry.kv_head_of_query == (0, 0, 1, 1)


def test_streaming_store_is_readable_without_bayesgeom(llama, prompts, tmp_path):
    out = tmp_path / "store"
    mem = capture(llama, prompts, ["resid_post.*", "attn.-1.v"], "last", progress=False)
    disk = capture(llama, prompts, ["resid_post.*", "attn.-1.v"], "last", out=out,
                   prompts_per_shard=2, batch_size=1, progress=False)
    assert disk.complete and len(disk.shard_paths()) == 2
    for s in mem.sites:  # batch sizes differ (1 vs 8): equal up to matmul rounding
        torch.testing.assert_close(disk[s], mem[s], atol=1e-5, rtol=1e-5)
    code = textwrap.dedent(f"""
        import json, sys
        import numpy as np, pyarrow.parquet as pq
        from safetensors.numpy import load_file
        root = {str(out)!r}
        man = json.load(open(root + "/manifest.json"))
        rows = [load_file(root + "/" + s["file"]) for s in man["shards"]]
        v = np.concatenate([r["attn.1.v"] for r in rows])
        ent = np.concatenate([r["entropy_bits"] for r in rows])
        prompts = pq.read_table(root + "/prompts.parquet").to_pydict()
        assert not any(m.split(".")[0] in ("interp", "windtunnel", "torch") for m in sys.modules)
        print(json.dumps({{"v": list(v.shape), "ent": len(ent), "text": prompts["text"][0],
                          "model": man["model"]["family"], "complete": man["complete"],
                          "versions": sorted(man["run"]["versions"])}}))
    """)
    res = json.loads(subprocess.run([sys.executable, "-c", code], capture_output=True,
                                    text=True, check=True).stdout)
    assert res["v"] == [len(prompts), 2, 8] and res["ent"] == len(prompts)
    assert res["text"] == prompts[0] and res["model"] == "llama" and res["complete"]
    assert {"torch", "transformers", "transformer-lens"} <= set(res["versions"])


def test_streaming_resumes_skipping_finished_shards(llama, prompts, tmp_path, monkeypatch):
    out = tmp_path / "store"
    real_write = ShardWriter.write

    def crash_on_second(self, k, *args, **kw):
        if k == 1:
            raise KeyboardInterrupt("simulated kill")
        return real_write(self, k, *args, **kw)

    monkeypatch.setattr(ShardWriter, "write", crash_on_second)
    with pytest.raises(KeyboardInterrupt):
        capture(llama, prompts, ["resid_post.0"], "last", out=out, prompts_per_shard=2,
                progress=False)
    assert not ActivationStore.open(out).complete
    first = (out / "shards" / "shard-00000.safetensors").stat().st_mtime_ns
    monkeypatch.setattr(ShardWriter, "write", real_write)
    calls = []
    fwd = llama.forward
    monkeypatch.setattr(llama, "forward", lambda b, **kw: (calls.append(b.size), fwd(b, **kw))[1])
    store = capture(llama, prompts, ["resid_post.0"], "last", out=out, prompts_per_shard=2,
                    progress=False)
    assert store.complete and sum(calls) == 2  # only the unfinished shard's 2 prompts ran
    assert (out / "shards" / "shard-00000.safetensors").stat().st_mtime_ns == first
    mem = capture(llama, prompts, ["resid_post.0"], "last", progress=False)
    torch.testing.assert_close(store["resid_post.0"], mem["resid_post.0"], atol=1e-6, rtol=0)


def test_a_different_capture_into_the_same_directory_is_refused(llama, prompts, tmp_path):
    out = tmp_path / "store"
    capture(llama, prompts, ["resid_post.0"], out=out, progress=False)
    with pytest.raises(StoreError, match="differs in: sites"):
        capture(llama, prompts, ["resid_post.1"], out=out, progress=False)
    (tmp_path / "other").mkdir()
    (tmp_path / "other" / "notes.txt").write_text("x")
    with pytest.raises(StoreError, match="not empty"):
        capture(llama, prompts, ["resid_post.0"], out=tmp_path / "other", progress=False)


def test_bad_input_errors(llama, prompts):
    with pytest.raises(PromptError, match="empty"):
        capture(llama, [], ["resid_post.0"], progress=False)
    with pytest.raises(PromptError, match="prompt 1 is an empty string"):
        capture(llama, ["a", ""], ["resid_post.0"], progress=False)
    with pytest.raises(PromptError, match=r"prompt 1 holds a NUL byte \(at character 2\)"):
        capture(llama, ["a", "ok\x00"], ["resid_post.0"], progress=False)
    long = " ".join(["capital"] * 80)
    with pytest.raises(PromptError, match=r"prompt 1 .* longer than the model context of 64"):
        capture(llama, ["ok", long], ["resid_post.0"], progress=False)
    with pytest.raises(UnknownSiteError, match=r"valid layers are 0\.\.1"):
        capture(llama, prompts, ["resid_post.7"], progress=False)
    with pytest.raises(UnknownSiteError, match=r"valid sites: resid_pre\.\{L\}"):
        capture(llama, prompts, ["attn.0.value"], progress=False)


def test_nan_is_reported_with_site_prompt_and_position(llama, prompts):
    def poison(_m, _a, out):
        out = out.clone()
        out[-1, -2] = float("nan")  # last batch row, second-to-last column
        return out

    n3 = len(llama.encode(prompts)[0][3])
    assert n3 >= 2
    h = llama.hf.model.layers[1].register_forward_hook(poison)  # before the capture hook
    before = _hooks(llama.hf)
    try:
        with pytest.raises(NonFiniteActivationError,
                           match=rf"NaN in site resid_post.1 at prompt 3, position {n3 - 2}"):
            capture(llama, prompts, ["resid_post.1"], "all", batch_size=4, progress=False)
    finally:
        h.remove()
    assert _hooks(llama.hf) == before - 1


@pytest.mark.parametrize("family", ["llama", "gpt_neox"])
def test_final_norm_scale_is_the_norm_divisor(family, tiny_models, family_prompts):
    m = interp.load(tiny_models[family].path)
    store = capture(m, family_prompts[family], ["resid_post.-1", "final_norm.scale"], "all",
                    progress=False)
    x = store["resid_post.1"].double()
    if family == "gpt_neox":  # LayerNorm: centred
        x = x - x.mean(-1, keepdim=True)
        eps = m.hf.gpt_neox.final_layer_norm.eps
    else:  # RMSNorm
        eps = m.hf.model.norm.variance_epsilon
    expected = (x.pow(2).mean(-1) + eps).sqrt()
    torch.testing.assert_close(store["final_norm.scale"].double(), expected, atol=1e-5, rtol=1e-5)


def test_dtype_and_device_map_options(tiny_models, family_prompts):
    m = interp.load(tiny_models["llama"].path, dtype="bfloat16", device_map="cpu")
    assert m.info.dtype == "bfloat16"
    store = capture(m, family_prompts["llama"], ["attn.-1.v"], progress=False)
    assert store["attn.1.v"].dtype == torch.float32
    assert store.manifest["identity"]["model_dtype"] == "bfloat16"
    base = m.logits(family_prompts["llama"])
    with interp.intervene(m, interp.AddVector("attn.-1.v", torch.ones(16), positions="last")):
        assert not torch.equal(m.logits(family_prompts["llama"]), base)


def test_stores_answer_negative_layer_names(llama, prompts, tmp_path):
    mem = capture(llama, prompts, ["attn.-1.v", "resid_post.0"], "last", progress=False)
    disk = capture(llama, prompts, ["attn.-1.v", "resid_post.0"], "last", out=tmp_path / "s",
                   progress=False)
    for store in (mem, disk, ActivationStore.open(tmp_path / "s")):
        assert torch.equal(store["attn.-1.v"], store["attn.1.v"])
        assert torch.equal(store["resid_post.-2"], store["resid_post.0"])
        with pytest.raises(KeyError, match=r"it holds attn\.1\.v, resid_post\.0"):
            store["resid_post.-1"]


def _entropy_bits(logits: torch.Tensor) -> torch.Tensor:
    logp = torch.log_softmax(logits.double(), -1)
    return -(logp.exp() * logp).sum(-1) / math.log(2)


def test_wind_tunnel_entropy_is_over_the_hypothesis_slice(family_prompts, tmp_path):
    """A wind tunnel is trained on its hypothesis slice only: capture's entropy ignores the rest
    of the vocabulary, even a huge logit forced onto a non-hypothesis token, and says so."""
    from bayesgeom.windtunnel import make_task
    from bayesgeom.windtunnel.architectures import build_model

    task = make_task("bijection", V=6)
    hyp = task.hyp_slice
    hf = build_model(task, "transformer", "tiny", seed=0)
    boost = torch.zeros(task.vocab_size)
    boost[0] = 60.0  # a key token, outside the hypothesis (value) slice
    hf.get_output_embeddings().register_forward_hook(lambda mod, args, out: out + boost)
    prompts = family_prompts["windtunnel"]
    wt = interp.InterpModel(hf, None, task=task)
    store = capture(wt, prompts, ["logits"], "all", progress=False)
    logits = store["logits"]
    h_slice, h_full = _entropy_bits(logits[:, hyp]), _entropy_bits(logits)
    assert h_full.max() < 1e-6 and h_slice.min() > 0.5  # the forced token takes all the mass
    torch.testing.assert_close(store.entropy_bits.double(), h_slice, atol=1e-4, rtol=0)
    assert store.entropy_over == "hypothesis slice"
    assert store.manifest["entropy_ids"] == [hyp.start, hyp.stop, hyp.step]

    # the last-position path (no logits site), streamed to disk and reopened
    last = capture(wt, prompts, ["resid_post.0"], "last", out=tmp_path / "s", progress=False)
    ends = [len(p) - 1 for p in prompts]
    starts = [sum(len(p) for p in prompts[:i]) for i in range(len(prompts))]
    want = h_slice[[s + e for s, e in zip(starts, ends, strict=True)]]
    torch.testing.assert_close(last.entropy_bits.double(), want, atol=1e-4, rtol=0)
    reopened = ActivationStore.open(tmp_path / "s")
    assert reopened.entropy_over == "hypothesis slice"
    assert reopened.manifest["identity"]["entropy_over"] == "hypothesis slice"

    # without a task attached the same model's entropy is over the whole vocabulary
    bare = capture(interp.InterpModel(hf, None), prompts, ["logits"], "all", progress=False)
    assert bare.entropy_over == "vocabulary" and bare.manifest["entropy_ids"] is None
    torch.testing.assert_close(bare.entropy_bits.double(), h_full, atol=1e-4, rtol=0)


def test_a_store_held_by_another_process_is_refused_at_once(llama, prompts, tmp_path):
    """Two processes capturing into one --out: the second gets RunBusyError at once; the
    first's store stays whole and the folder is free again once it is done."""
    from bayesgeom.records import RunBusyError

    out = tmp_path / "store"
    holder = subprocess.Popen(
        [sys.executable, "-c", textwrap.dedent(f"""
            import sys
            from records import hold
            with hold({str(out)!r}):
                print("held", flush=True)
                sys.stdin.readline()
        """)], stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
    try:
        assert holder.stdout.readline().strip() == "held"
        t = time.perf_counter()
        with pytest.raises(RunBusyError, match=rf"{out} is in use by process {holder.pid}"):
            capture(llama, prompts, ["resid_post.0"], out=out, progress=False)
        assert time.perf_counter() - t < 5  # at once: no waiting on the lock
        assert not (out / "manifest.json").exists()
    finally:
        holder.communicate("\n", timeout=30)
    store = capture(llama, prompts, ["resid_post.0"], out=out, progress=False)
    assert store.complete and len(ActivationStore.open(out)) == len(prompts)


@pytest.mark.skipif(not os.path.isdir("/proc/self/fd"), reason="names fds through /proc")
def test_an_out_that_is_a_file_or_on_a_full_disk_is_one_line(llama, prompts, tmp_path,
                                                              monkeypatch):
    import errno

    from bayesgeom.records import FileFault, RunDirError

    (tmp_path / "f").write_text("x")
    with pytest.raises(RunDirError, match=rf"^{tmp_path / 'f'} is a file, not a directory; "
                                          "choose another --out$"):
        capture(llama, prompts, ["resid_post.0"], out=tmp_path / "f" / "s", progress=False)

    real_fsync = os.fsync

    def full(fd):  # the disk fills up when the first shard is written
        if "shard-" in os.readlink(f"/proc/self/fd/{fd}"):
            raise OSError(errno.ENOSPC, "No space left on device")
        return real_fsync(fd)

    monkeypatch.setattr(os, "fsync", full)
    out = tmp_path / "s"
    with pytest.raises(FileFault) as e:
        capture(llama, prompts, ["resid_post.0"], out=out, progress=False)
    assert str(e.value).startswith(f"no space left on the device holding {out / 'shards'}")
    monkeypatch.setattr(os, "fsync", real_fsync)
    assert capture(llama, prompts, ["resid_post.0"], out=out, progress=False).complete


def test_a_damaged_store_is_one_line_naming_the_file(llama, prompts, tmp_path):
    out = tmp_path / "store"
    capture(llama, prompts, ["resid_post.0"], out=out, prompts_per_shard=2, progress=False)
    shard = out / "shards" / "shard-00001.safetensors"
    good = shard.read_bytes()
    shard.write_bytes(good[:-10])
    with pytest.raises(StoreError, match=rf"{shard} has {len(good) - 10} bytes, {len(good)} "
                                         r"were written \(truncated"):
        ActivationStore.open(out)
    shard.write_bytes(good)
    manifest = out / "manifest.json"
    text = manifest.read_text()
    manifest.write_text(text[: len(text) // 2])
    with pytest.raises(StoreError, match=rf"{manifest} is not valid JSON") as e:
        ActivationStore.open(out)
    assert interp.errors.StoreError is type(e.value) and e.value.exit_code == 1
    manifest.write_text("[1, 2]")
    with pytest.raises(StoreError, match="holds a JSON list"):
        ActivationStore.open(out)
    manifest.write_text(text)
    (out / "prompts.parquet").write_bytes(b"not parquet")
    with pytest.raises(StoreError, match=r"prompts\.parquet is not a readable parquet"):
        _ = ActivationStore.open(out).prompts


def test_an_altered_shard_is_captured_again_on_resume(llama, prompts, tmp_path, capfd):
    out = tmp_path / "store"
    capture(llama, prompts, ["resid_post.0"], out=out, prompts_per_shard=2, progress=False)
    m = json.loads((out / "manifest.json").read_text())
    m["complete"] = False  # as if the run had been killed before it finished
    (out / "manifest.json").write_text(json.dumps(m))
    shard = out / "shards" / "shard-00000.safetensors"
    raw = bytearray(shard.read_bytes())
    raw[-3] ^= 0xFF  # one activation byte: same size, valid header
    shard.write_bytes(bytes(raw))
    ActivationStore.open(out)  # opening checks sizes and headers only
    capfd.readouterr()
    store = capture(llama, prompts, ["resid_post.0"], out=out, prompts_per_shard=2,
                    progress=False)
    assert "shard-00000.safetensors does not match its recorded checksum" in capfd.readouterr().err
    mem = capture(llama, prompts, ["resid_post.0"], progress=False)
    torch.testing.assert_close(store["resid_post.0"], mem["resid_post.0"], atol=1e-6, rtol=0)


def test_prompts_a_bom_and_wrong_types(llama):
    assert llama.encode(["\ufeffThe capital"]) == llama.encode(["The capital"])
    for bad, msg in (([[1.5, 2]], r"prompt 0: token 0 is 1\.5 \(float\)"),
                     ([1, 2, 3], r"prompt 0 is 1 \(int\); pass strings or lists of token ids"),
                     ([[1, 2], None], r"prompt 1 is None"),
                     ([b"bytes"], "decode it to str"),
                     ([[True, 2]], r"token 0 is True \(bool\)"),
                     (42, "prompts must be a list"),
                     ([torch.ones(3)], "pass 1-D integer token ids")):
        with pytest.raises(PromptError, match=msg):
            llama.encode(bad)
    assert llama.encode([torch.tensor([1, 2])]) == ([[1, 2]], None)


def test_a_different_capture_is_replaced_only_with_restart(llama, prompts, tmp_path):
    from bayesgeom.interp import StoreMismatchError

    out = tmp_path / "s"
    capture(llama, prompts, ["resid_post.0"], out=out, progress=False)
    with pytest.raises(StoreMismatchError, match=r"holds a different capture \(differs in: "
                                                 r"sites\); choose another --out, or pass "
                                                 r"--restart to replace it"):
        capture(llama, prompts, ["resid_post.1"], out=out, progress=False)
    store = capture(llama, prompts, ["resid_post.1"], out=out, progress=False, restart=True)
    assert store.sites == ["resid_post.1"] and len(list((out / "shards").iterdir())) >= 1


def test_another_commands_run_is_not_a_store(llama, prompts, tmp_path):
    from bayesgeom.interp import StoreMismatchError
    from bayesgeom.records import RunDir, exit_code

    with RunDir(tmp_path / "g", "geometry", {}) as rd:
        (tmp_path / "g" / "manifest.json").write_text('{"created_utc": "now"}')
        rd.finish()
    with pytest.raises(StoreMismatchError, match="holds a bayesgeom geometry run, not an "
                                                 "activation store") as e:
        capture(llama, prompts, ["resid_post.0"], out=tmp_path / "g", progress=False)
    assert exit_code(e.value) == 2
    (tmp_path / "g" / "run.json").unlink()
    with pytest.raises(StoreMismatchError, match="is another kind of manifest"):
        capture(llama, prompts, ["resid_post.0"], out=tmp_path / "g", progress=False)
