"""Capture overhead: plain HF eager forward vs bayesgeom capture vs TransformerLens run_with_cache.

Side by side, in one run, on (1) a random-initialised model with Pythia-160m's shape (GPT-NeoX,
12 layers, d = 768, 12 heads, vocab 50,304) and (2) the embedded SmolLM2-135M, each on the same
[B, T] token batch with eager attention:

* ``plain``        ``model(input_ids, attention_mask, position_ids)``, no hooks (all logits);
* ``plain_last``   the same with ``logits_to_keep=1`` (what capture does at ``positions="last"``);
* ``capture``      ``interp.capture`` of every ``resid_post`` + last-layer V + last-layer pattern
                   at the final token (in memory; prompt validation and row bookkeeping included);
* ``tl_cache``     ``TransformerBridge.run_with_cache`` with the equivalent names filter
                   (``blocks.*.hook_resid_post``, last ``attn.hook_v`` and ``attn.hook_pattern``)
                   and ``pos_slice=-1``, on a separate model instance.

Times are medians over interleaved repetitions (order rotated every repetition). Memory: peak RSS
(``VmHWM``) of a fresh process that loads the model and runs one forward of a batch, vs one
that streams a capture of 2,000 prompts of the same batch size and length to disk.

    python benchmarks/capture_overhead.py                    # full run, writes runs/bench/...
    python benchmarks/capture_overhead.py --quick            # 3 reps, 200 streamed prompts
"""

from __future__ import annotations

import argparse
import json
import resource
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import torch

from bayesgeom import interp
from bayesgeom.records import run_manifest, write_json

PYTHIA_160M = dict(vocab_size=50304, hidden_size=768, num_hidden_layers=12,
                   num_attention_heads=12, intermediate_size=3072,
                   max_position_embeddings=2048, rotary_pct=0.25, use_parallel_residual=True)


def pythia_dir(root: Path) -> Path:
    """A Pythia-160m-shaped GPT-NeoX with random weights (seed 0), saved as safetensors."""
    from transformers import GPTNeoXConfig, GPTNeoXForCausalLM

    d = root / "pythia-160m-shape-random"
    if not (d / "config.json").exists():
        torch.manual_seed(0)
        GPTNeoXForCausalLM(GPTNeoXConfig(**PYTHIA_160M)).save_pretrained(d)
    return d


def token_batch(vocab: int, n: int, t: int, seed: int) -> torch.Tensor:
    g = torch.Generator().manual_seed(seed)
    return torch.randint(100, vocab - 100, (n, t), generator=g)


SITES = ["resid_post.*", "attn.-1.v", "attn.-1.pattern"]


def tl_names(n_layers: int) -> list[str]:
    last = n_layers - 1
    return [f"blocks.{i}.hook_resid_post" for i in range(n_layers)] + [
        f"blocks.{last}.attn.hook_v", f"blocks.{last}.attn.hook_pattern"]


def time_methods(src: str | None, batch: int, tokens: int, reps: int) -> dict[str, Any]:
    m = interp.load(src, attn_implementation="eager")
    tl = interp.load(src, backend="transformer_lens")
    ids = token_batch(m.vocab_size or 50000, batch, tokens, seed=1)
    b = m.batch(ids.tolist())
    names = tl_names(m.n_layers)

    def plain() -> None:
        with torch.no_grad():
            m.hf(input_ids=b.input_ids, attention_mask=b.attention_mask,
                 position_ids=b.position_ids, use_cache=False)

    def plain_last() -> None:
        with torch.no_grad():
            m.hf(input_ids=b.input_ids, attention_mask=b.attention_mask,
                 position_ids=b.position_ids, use_cache=False, logits_to_keep=1)

    def cap() -> None:
        interp.capture(m, ids, SITES, "last", batch_size=batch, progress=False)

    def tl_cache() -> None:
        with torch.no_grad():
            tl.bridge.run_with_cache(ids, attention_mask=b.attention_mask, names_filter=names,
                                     pos_slice=-1)

    fns = {"plain": plain, "plain_last": plain_last, "capture": cap, "tl_cache": tl_cache}
    for f in fns.values():  # warm-up
        f()
    times: dict[str, list[float]] = {k: [] for k in fns}
    order = list(fns)
    for r in range(reps):
        for k in order[r % len(order):] + order[: r % len(order)]:
            t = time.perf_counter()
            fns[k]()
            times[k].append(time.perf_counter() - t)
    med = {k: statistics.median(v) for k, v in times.items()}
    return {"model": m.info.name, "family": m.info.family, "batch": batch, "tokens": tokens,
            "reps": reps, "median_s": med, "all_s": times,
            "capture_over_plain": med["capture"] / med["plain"],
            "capture_over_plain_last": med["capture"] / med["plain_last"],
            "capture_over_tl": med["capture"] / med["tl_cache"]}


def peak_rss_mib() -> float:
    """This process's peak resident set size (MiB).

    Linux: ``VmHWM`` of /proc/self/status, which belongs to the exec'd image. (``ru_maxrss``
    would also count the parent's pages at fork time, since Linux carries it across exec.)
    """
    status = Path("/proc/self/status")
    if status.exists():
        for line in status.read_text().splitlines():
            if line.startswith("VmHWM:"):
                return int(line.split()[1]) / 1024
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024


def rss_worker(mode: str, src: str | None, n: int, batch: int, tokens: int, out: str) -> None:
    """Run in a fresh process; print peak RSS (MiB) and wall time as JSON."""
    t0 = time.perf_counter()
    m = interp.load(src, attn_implementation="eager")
    if mode == "forward":
        ids = token_batch(m.vocab_size or 50000, batch, tokens, seed=2)
        b = m.batch(ids.tolist())
        with torch.no_grad():
            m.hf(input_ids=b.input_ids, attention_mask=b.attention_mask,
                 position_ids=b.position_ids, use_cache=False)
    else:
        ids = token_batch(m.vocab_size or 50000, n, tokens, seed=2)
        store = interp.capture(m, ids, SITES, "last", batch_size=batch, out=out,
                               progress=False)
        assert store.complete and len(store) == n
    peak = peak_rss_mib()
    print(json.dumps({"mode": mode, "peak_rss_mib": peak, "wall_s": time.perf_counter() - t0}))


def measure_rss(src: str | None, n: int, batch: int, tokens: int) -> dict[str, Any]:
    res: dict[str, Any] = {}
    with tempfile.TemporaryDirectory() as tmp:
        for mode in ("forward", "stream"):
            cmd = [sys.executable, __file__, "--rss-worker", mode, "--src", src or "",
                   "--n", str(n), "--batch", str(batch), "--tokens", str(tokens),
                   "--store", str(Path(tmp) / "store")]
            out = subprocess.run(cmd, capture_output=True, text=True, check=True).stdout
            res[mode] = json.loads(out.strip().splitlines()[-1])
    res["stream_prompts"] = n
    res["stream_over_forward"] = res["stream"]["peak_rss_mib"] / res["forward"]["peak_rss_mib"]
    return res


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--quick", action="store_true")
    p.add_argument("--reps", type=int, default=None)
    p.add_argument("--batch", type=int, default=8)
    p.add_argument("--tokens", type=int, default=64)
    p.add_argument("--rss-prompts", type=int, default=None)
    p.add_argument("--rss-batch", type=int, default=16)
    p.add_argument("--rss-tokens", type=int, default=16)
    p.add_argument("--out", default="runs/bench/capture_overhead.json")
    p.add_argument("--rss-worker", default=None, help=argparse.SUPPRESS)
    p.add_argument("--src", default=None, help=argparse.SUPPRESS)
    p.add_argument("--n", type=int, default=0, help=argparse.SUPPRESS)
    p.add_argument("--store", default=None, help=argparse.SUPPRESS)
    a = p.parse_args()
    if a.rss_worker:
        rss_worker(a.rss_worker, a.src or None, a.n, a.batch, a.tokens, a.store)
        return
    reps = a.reps or (3 if a.quick else 7)
    n_stream = a.rss_prompts or (200 if a.quick else 2000)
    root = Path(tempfile.gettempdir()) / "bayesgeom-bench"
    models = {"pythia-160m-shape (random)": str(pythia_dir(root)), "smollm2-135m": None}
    results: dict[str, Any] = {}
    for label, src in models.items():
        print(f"[{label}] timing plain / capture / TransformerLens ({reps} reps, "
              f"batch {a.batch} x {a.tokens} tokens)", flush=True)
        r = time_methods(src, a.batch, a.tokens, reps)
        print(f"[{label}] peak RSS: one forward vs streaming {n_stream} prompts "
              f"(batch {a.rss_batch} x {a.rss_tokens} tokens)", flush=True)
        r["rss"] = measure_rss(src, n_stream, a.rss_batch, a.rss_tokens)
        results[label] = r
    print()
    print(f"{'model':<28} {'plain':>8} {'plain_last':>10} {'capture':>8} {'tl_cache':>9} "
          f"{'cap/plain':>9} {'cap/last':>8} {'cap/TL':>7} {'RSS ratio':>9}")
    for label, r in results.items():
        md = r["median_s"]
        print(f"{label:<28} {md['plain']:>8.3f} {md['plain_last']:>10.3f} {md['capture']:>8.3f} "
              f"{md['tl_cache']:>9.3f} {r['capture_over_plain']:>9.3f} "
              f"{r['capture_over_plain_last']:>8.3f} {r['capture_over_tl']:>7.3f} "
              f"{r['rss']['stream_over_forward']:>9.3f}")
    write_json(a.out, {"results": results, "manifest": run_manifest(
        seed=0, dtype="float32", reps=reps, batch=a.batch, tokens=a.tokens)})
    print(f"written: {a.out}")


if __name__ == "__main__":
    main()
