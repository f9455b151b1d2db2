"""Peak memory of ``capture``, ``geometry``, ``steer`` and ``verify`` per byte of the weights read.

Builds a random-initialised model of a real family (default: Gemma-3-270m's shape -- 262,144-
token vocabulary, width 640, tied embeddings -- with ``--layers`` decoder layers; or a Llama
with untied embeddings), saved as a float32 safetensors folder with a byte-level BPE tokenizer
trained offline (on the common licenses and SULA's words, so SULA's labels are single tokens).
No download. Then runs each experiment through its command line in a fresh process
(``benchmarks/memory_phases.py``), which records the exact peak resident set of every phase
(``VmHWM`` reset at each phase boundary), the resident set before the model loads
(``baseline``: torch, transformers and bayesgeom imported) and the weights' size, and names
the phase that peaks. (The child's ``ru_maxrss`` is no cross-check here: resetting ``VmHWM``
resets it too.)

Ratio = (peak − baseline) / weights: the memory the experiment adds beyond the interpreter, per
byte of the model it reads (the total-over-weights ratio is printed beside it). Targets
(``TARGETS``; docs/performance.md): ≤ 2 for ``capture``, ≤ 3 for every other experiment.

    python benchmarks/experiment_memory.py           # -> runs/bench/experiment_memory.json
    python benchmarks/experiment_memory.py --quick   # smaller pool and prompt sets
    python benchmarks/experiment_memory.py --family llama --vocab 128256 --width 512
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
#: the most (peak − baseline) / weights each experiment may reach
TARGETS = {"capture": 2.0, "geometry": 3.0, "steer": 3.0, "verify": 3.0}
LICENSES = Path("/usr/share/common-licenses")


def build_model(out: Path, family: str, vocab: int, width: int, layers: int,
                tokenizer_vocab: int = 4096) -> None:
    """Save a random-init ``family`` model (float32, seed 0) and a trained tokenizer to ``out``."""
    import torch
    from tokenizers import Tokenizer, decoders, models, pre_tokenizers, trainers
    from transformers import PreTrainedTokenizerFast

    from bayesgeom.windtunnel.sula import CARRIER_WORDS, LABEL_CANDIDATES

    words = [*CARRIER_WORDS, *LABEL_CANDIDATES]
    corpus = [p.read_text(errors="ignore") for p in sorted(LICENSES.glob("*")) if p.is_file()]
    corpus += [" ".join(f"{w}: {lab}" for w in words) for lab in LABEL_CANDIDATES] * 50
    tk = Tokenizer(models.BPE(unk_token="<unk>"))
    tk.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False)
    tk.decoder = decoders.ByteLevel()
    tk.train_from_iterator(corpus, trainers.BpeTrainer(
        vocab_size=tokenizer_vocab, special_tokens=["<unk>", "<pad>", "<eos>"],
        initial_alphabet=pre_tokenizers.ByteLevel.alphabet()))
    tok = PreTrainedTokenizerFast(tokenizer_object=tk, unk_token="<unk>", pad_token="<pad>",
                                  eos_token="<eos>", bos_token="<eos>")
    torch.manual_seed(0)
    heads = max(1, width // 128)
    if family == "gemma3":
        from transformers import Gemma3ForCausalLM, Gemma3TextConfig

        cfg = Gemma3TextConfig(vocab_size=vocab, hidden_size=width, intermediate_size=3 * width,
                               num_hidden_layers=layers, num_attention_heads=heads,
                               num_key_value_heads=1, head_dim=256, sliding_window=512,
                               max_position_embeddings=2048, tie_word_embeddings=True,
                               pad_token_id=1, bos_token_id=2, eos_token_id=2)
        model: Any = Gemma3ForCausalLM(cfg)
    elif family == "llama":
        from transformers import LlamaConfig, LlamaForCausalLM

        cfg = LlamaConfig(vocab_size=vocab, hidden_size=width, intermediate_size=3 * width,
                          num_hidden_layers=layers, num_attention_heads=heads,
                          num_key_value_heads=max(1, heads // 2), max_position_embeddings=2048,
                          tie_word_embeddings=False, pad_token_id=1, bos_token_id=2,
                          eos_token_id=2)
        model = LlamaForCausalLM(cfg)
    else:
        raise SystemExit(f"unknown family {family!r} (gemma3 or llama)")
    model.save_pretrained(out)
    tok.save_pretrained(out)


def capture_prompts(path: Path, n: int) -> Path:
    """``n`` prompts of about 400 characters (one a line) from the common licenses."""
    text = " ".join(p.read_text(errors="ignore") for p in sorted(LICENSES.glob("*"))
                    if p.is_file())
    words = text.split()
    lines = [" ".join(words[i * 60:(i + 1) * 60]) for i in range(n)]
    path.write_text("\n".join(lines) + "\n")
    return path


def experiment_args(experiment: str, model: Path, out: Path, quick: bool,
                    batch_size: int | None = None) -> list[str]:
    """The command line of one experiment (sizes chosen to run in minutes on 2 cores;
    ``batch_size``: every experiment's ``--batch-size``, else each one's default)."""
    common = ["--model", str(model), "--out", str(out), "--no-progress"]
    if batch_size is not None:
        common += ["--batch-size", str(batch_size)]
    if experiment == "capture":  # every token: next-token entropy needs every position's logits
        prompts = capture_prompts(out.with_suffix(".txt"), 16 if quick else 64)
        return [*common, "--prompts", str(prompts), "--sites", "resid_post.*", "attn.-1.v",
                "--positions", "all"]
    if experiment == "geometry":
        size = ["--pool-size", "200", "--n-per-quintile", "5"] if quick else \
            ["--pool-size", "500"]
        return [*common, "--prompts", "mixed", *size]
    if experiment == "steer":
        n = "10" if quick else "50"
        return [*common, "--n-per-k", n, "--cut", "1.0", "--shift", "2.0", "--no-keep-only",
                "--n-random", "2"]
    if experiment == "verify":
        return [*common, "--n-per-k", "10" if quick else "20", "--n-null", "50"]
    raise ValueError(experiment)


def run_phases(experiment: str, args: list[str], work: Path) -> dict[str, Any]:
    """Run ``bayesgeom EXPERIMENT ARGS`` under ``memory_phases.py`` in a fresh process and
    return its summary (see that module)."""
    out = work / f"{experiment}-memory.json"
    env = {**os.environ, "HF_HUB_OFFLINE": "1", "TOKENIZERS_PARALLELISM": "false"}
    proc = subprocess.run([sys.executable, str(ROOT / "benchmarks" / "memory_phases.py"),
                           str(out), experiment, *args], cwd=ROOT, env=env, text=True,
                          stdout=subprocess.PIPE, stderr=subprocess.STDOUT)
    if not out.exists():
        raise SystemExit(f"{experiment} failed (exit {proc.returncode}):\n{proc.stdout[-3000:]}")
    res = json.loads(out.read_text())
    if res["rc"] != 0:
        print(f"{experiment} exited {res['rc']}: {res['error'] or proc.stdout[-500:]}",
              file=sys.stderr)
    return res


def table(results: list[dict[str, Any]]) -> str:
    """A markdown table: one row per experiment, its phases' peaks (MiB above baseline /
    weights) and the phase that peaks."""
    lines = ["| experiment | weights MiB | baseline MiB | peak MiB | (peak − baseline) / weights "
             "| peak / weights | peaking phase | phases: peak − baseline, × weights |",
             "|---|---|---|---|---|---|---|---|"]
    for r in results:
        ph = ", ".join(f"{p} {v['ratio_above_baseline']:.2f}" for p, v in r["phases"].items()
                       if p not in ("other", "import") and v["ratio_above_baseline"] is not None)
        name = r["experiment"] + ("" if r["rc"] == 0 else f" (failed in {r['error']})")
        lines.append(f"| {name} | {r['weights_mib']:.0f} | {r['baseline_mib']:.0f} | "
                     f"{r['peak_mib']:.0f} | {r['ratio_above_baseline']:.2f} | "
                     f"{r['ratio_total']:.2f} | {r['peak_phase']} | {ph} |")
    return "\n".join(lines)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawTextHelpFormatter)
    ap.add_argument("--family", default="gemma3", choices=["gemma3", "llama"])
    ap.add_argument("--vocab", type=int, default=262144)
    ap.add_argument("--width", type=int, default=640)
    ap.add_argument("--layers", type=int, default=4)
    ap.add_argument("--experiments", default="capture,geometry,steer,verify")
    ap.add_argument("--quick", action="store_true", help="smaller pool and prompt sets")
    ap.add_argument("--batch-size", type=int, default=None,
                    help="every experiment's --batch-size (default: each one's own)")
    ap.add_argument("--out", type=Path, default=Path("runs/bench/experiment_memory.json"))
    ap.add_argument("--model-dir", type=Path, default=None,
                    help="reuse (or build into) this folder instead of a temporary one")
    a = ap.parse_args()

    with tempfile.TemporaryDirectory(prefix="memory-bench-") as tmp:
        work = Path(tmp)
        model = a.model_dir or work / "model"
        t = time.perf_counter()
        if not (model / "config.json").exists():
            subprocess.run([sys.executable, __file__, "--build", str(model), a.family,
                            str(a.vocab), str(a.width), str(a.layers)], check=True, cwd=ROOT)
        built_s = time.perf_counter() - t
        results = [run_phases(e, experiment_args(e, model, work / e, a.quick, a.batch_size),
                              work) for e in a.experiments.split(",")]
    summary = {"model": {"family": a.family, "vocab": a.vocab, "width": a.width,
                         "layers": a.layers, "dtype": "float32", "build_s": round(built_s, 1)},
               "batch_size": a.batch_size,
               "quick": a.quick, "targets": TARGETS, "results": results,
               "meets_target": all(r["ratio_above_baseline"] <= TARGETS[r["experiment"]]
                                   for r in results),
               "commit": _commit(), "date": time.strftime("%Y-%m-%d")}
    a.out.parent.mkdir(parents=True, exist_ok=True)
    a.out.write_text(json.dumps(summary, indent=1))
    print(table(results))
    print(f"targets (peak − baseline) / weights ≤ {TARGETS}: "
          f"{'met' if summary['meets_target'] else 'NOT met'}; written to {a.out}")


def _commit() -> str:
    try:
        return subprocess.run(["git", "rev-parse", "--short", "HEAD"], cwd=ROOT, check=True,
                              capture_output=True, text=True).stdout.strip()
    except (OSError, subprocess.CalledProcessError):
        return "unknown"


if __name__ == "__main__":
    if len(sys.argv) > 1 and sys.argv[1] == "--build":
        d, fam, v, w, n = sys.argv[2:7]
        build_model(Path(d), fam, int(v), int(w), int(n))
    else:
        main()
