"""Geometry's peak memory scales with the model it reads, not with its vocabulary times its
prompts' tokens: the memory a larger vocabulary adds stays within ``GEOMETRY_RATIO`` × the
weights it adds, the target stated in docs/performance.md.

Two random-initialised Gemma-3 models (the family of the 262k-vocabulary report; tied
embeddings) that differ only in their vocabulary -- 131,072 tokens (weights ≈ 130 MiB, almost
all embedding) and 8,192 (≈ 9 MiB) -- each run the whole pipeline (pool scoring, capture at the
final token and, for the key measures, at every token; numerics; the random-init twin; the
report) in a fresh child process, side by side.

What is measured, and against what:

* **peak**: each child's ``VmHWM`` (the kernel's exact high-water mark of its resident set: no
  sampling, no timer) at the end of its run, minus its ``VmHWM`` just before the run, after
  torch, transformers, pyarrow, plotly and the pipeline were imported (~500 MiB, torch alone
  ~300-400 MiB). Not ``resource.getrusage(...).ru_maxrss``: on Linux a child's starts from the
  *parent's* resident set at fork (the pytest process, with torch and every fixture), so it
  would measure the test runner;
* **the baseline is the small-vocabulary run**: what the pipeline costs whatever the model --
  the interpreter, tokenised prompts, the pool's corpora, activations of a 256-wide model,
  bootstrap arrays, the report, allocator slack (~125 MiB at these sizes) -- is the same in
  both runs and cancels; what is left is what scales with the weights (the weights themselves,
  the twin, anything [batch, tokens, vocab]). So the ratio means the same for this 130 MiB
  model as for an 8B one, where that fixed cost vanishes beside the weights anyway;
* **weights**: the bytes of each model's safetensors file (a tied embedding is stored once).

Measured (2026-11-26): before the fix the larger vocabulary added 3,392 MiB for 120 MiB of
weights, 28× (the every-token capture computed logits at every position, [batch, tokens,
131,072] float32 plus its log-softmax temporaries); now 195 MiB, 1.6× (the weights, the twin,
and the second output matrix the twin's constructor holds until it is tied).
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
import torch

from ..conftest import _interp_fixtures

#: the most memory geometry may add per byte of weights added (docs/performance.md)
GEOMETRY_RATIO = 3.0
WIDTH = 256
VOCABS = (8192, 131072)

CHILD = r"""
import json, re, sys
from pathlib import Path


def hwm_kib():
    return int(re.search(r"VmHWM:\s+(\d+) kB", Path("/proc/self/status").read_text()).group(1))


import torch, transformers, pyarrow, plotly.graph_objects  # noqa: the interpreter's fixed cost
from bayesgeom.analyses.geometry import report  # noqa
from bayesgeom.analyses.geometry.run import GeometryConfig, run_geometry
from bayesgeom.analyses.prompts import corpora
from bayesgeom.analyses.prompts.corpora import CorpusPaths

corpora.package_dir = lambda module: None  # the standard library and licenses only
corpora.R_LIBRARY_DIRS = ()
base = hwm_kib()
run_geometry(GeometryConfig(model=sys.argv[1], out=sys.argv[2], pool_size=50,
                            n_per_quintile=4, batch_size=8, score_batch_size=8, n_resamples=50,
                            curve_resamples=20,
                            random_init_draws=8, progress=False,
                            corpus_paths=CorpusPaths(r_libraries=())))
print(json.dumps({"baseline_kib": base, "peak_kib": hwm_kib()}))
"""


def build_model(root: Path, vocab: int) -> Path:
    """A seed-0 random Gemma-3 (2 layers, width 256, tied embeddings) with ``vocab`` tokens and
    the tests' byte-level BPE tokenizer, as float32 safetensors."""
    from transformers import Gemma3ForCausalLM, Gemma3TextConfig

    tok = _interp_fixtures().train_tokenizer()
    cfg = Gemma3TextConfig(vocab_size=vocab, hidden_size=WIDTH, intermediate_size=2 * WIDTH,
                           num_hidden_layers=2, num_attention_heads=2, num_key_value_heads=1,
                           head_dim=64, sliding_window=64, max_position_embeddings=512,
                           tie_word_embeddings=True, pad_token_id=1, bos_token_id=2,
                           eos_token_id=2)
    torch.manual_seed(0)
    d = root / f"gemma3-{vocab}"
    Gemma3ForCausalLM(cfg).save_pretrained(d)
    tok.save_pretrained(d)
    return d


@pytest.mark.skipif(not Path("/proc/self/status").exists(), reason="reads /proc (Linux)")
def test_geometry_memory_grows_with_the_weights_within_its_ratio(tmp_path, scaled):
    env = {**os.environ, "HF_HUB_OFFLINE": "1", "TOKENIZERS_PARALLELISM": "false",
           "OMP_NUM_THREADS": "1"}
    models = [build_model(tmp_path, v) for v in VOCABS]
    procs = [subprocess.Popen([sys.executable, "-c", CHILD, str(d), str(tmp_path / f"run{i}")],
                              cwd=tmp_path, env=env, stdout=subprocess.PIPE,
                              stderr=subprocess.PIPE, text=True)
             for i, d in enumerate(models)]
    added, weights = [], []
    for d, p in zip(models, procs, strict=True):
        out, err = p.communicate(timeout=scaled(600))
        assert p.returncode == 0, err[-3000:]
        got = json.loads(out.strip().splitlines()[-1])
        added.append((got["peak_kib"] - got["baseline_kib"]) * 1024)
        weights.append(sum(f.stat().st_size for f in d.glob("*.safetensors")))
    ratio = (added[1] - added[0]) / (weights[1] - weights[0])
    assert ratio <= GEOMETRY_RATIO, (
        f"{VOCABS[1]:,} tokens instead of {VOCABS[0]:,} add {(weights[1] - weights[0]) / 2**20:.0f}"
        f" MiB of weights and {(added[1] - added[0]) / 2**20:.0f} MiB to geometry's peak: "
        f"{ratio:.2f}x (target {GEOMETRY_RATIO}x); benchmarks/experiment_memory.py names the "
        "phase that peaks")
