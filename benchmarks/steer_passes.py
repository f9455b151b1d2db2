"""Steering's edited passes against a bare forward over the same prompts, in one run.

``bayesgeom steer`` runs, per condition, one edited pass along the entropy axis and one along
each control direction, each scored for its total and norm-frozen effects. This times what
``analyses.steer.run`` does per condition on the model's own steering prompts (a wind tunnel's
task, or SULA for a text model), at the last layer's values (``attn.v``, every position):

* ``edited``  the condition's passes (the axis and ``--controls`` random directions; stacked as
              replicas of one forward where the tree has ``Runner.edited_many``, one edit at a
              time otherwise, so the same script measures the code before and after) and their
              scoring (``analyses.steer.scores.score``, ``tidy``, ``per_prompt_rows``), wall time
              per edited pass;
* ``bare``    ``model.forward`` of the clean pass' batches with the last token's logits, no
              hooks: a round of repetitions before the first condition and after each, each
              condition set against the rounds either side of it (a shared machine's load
              drifts over minutes).

Ratio: per edited pass / bare forward (target ≤ 1.5×, issue 39), with and without the scoring.

    python benchmarks/steer_passes.py --model runs/tiny-bijection   # a wind tunnel, 250 prompts
    python benchmarks/steer_passes.py --n-per-k 10                   # SmolLM2, 50 SULA prompts
    python benchmarks/steer_passes.py --quick                        # seconds: not a result
"""

from __future__ import annotations

import argparse
import statistics
import time
from typing import Any

import torch

from bayesgeom import interp
from bayesgeom.analyses.kit.models import open_model
from bayesgeom.analyses.steer.passes import Runner
from bayesgeom.analyses.steer.run import SteerConfig, posterior_prompts
from bayesgeom.analyses.steer.scores import CleanRef, conditions, per_prompt_rows, score, tidy
from bayesgeom.records import run_manifest, write_json


def edited_passes(runner: Runner, edits: list[list[Any]]) -> Any:
    """The tree's way of running a condition's passes: stacked where it can, else one by one."""
    many = getattr(runner, "edited_many", None)
    return many(edits) if many is not None else (runner.edited(e) for e in edits)


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--model", default=None, help="a wind-tunnel run or a model (default: SmolLM2)")
    p.add_argument("--n-prompts", type=int, default=250, help="wind-tunnel prompts")
    p.add_argument("--n-per-k", type=int, default=50, help="SULA prompts per k")
    p.add_argument("--controls", type=int, default=20, help="control directions per condition")
    p.add_argument("--batch-size", type=int, default=32)
    p.add_argument("--reps", type=int, default=3, help="bare-forward repetitions per round")
    p.add_argument("--quick", action="store_true", help="a few prompts and controls: not a result")
    p.add_argument("--threads", type=int, default=None, help="torch CPU threads")
    p.add_argument("--out", default="runs/bench/steer_passes.json")
    a = p.parse_args()
    if a.threads:
        torch.set_num_threads(a.threads)
    if a.quick:
        a.n_prompts, a.n_per_k, a.controls = 24, 4, 3
    m = open_model(a.model)
    cfg = SteerConfig(model=a.model, out="unused", n_prompts=a.n_prompts, n_per_k=a.n_per_k)
    pp = posterior_prompts(cfg, m)
    vocab = pp.hyp_ids if m.task is not None else None
    layer = m.n_layers - 1
    site = interp.site_name("attn.v", layer)
    runner = Runner(m, pp, [site], [layer], batch_size=a.batch_size, norm_frozen=True,
                    progress=False)
    clean = runner.clean()
    ref = CleanRef.of(clean, vocab)
    d = clean.acts[layer].shape[1]
    g = torch.Generator().manual_seed(0)
    dirs = [[torch.randn(d, generator=g, dtype=torch.float64)] for _ in range(a.controls + 1)]
    conds = conditions((1.0,), True, (2.0,))
    bare: list[list[float]] = []

    def bare_round() -> None:
        times = []
        for _ in range(a.reps):
            t0 = time.perf_counter()
            for c in runner.chunks:
                m.forward(c.cached.batch, logits_to_keep=1)
            times.append(time.perf_counter() - t0)
        bare.append(times)

    print(f"{m.info.name}: {len(pp)} prompts, {len(conds)} conditions x {len(dirs)} passes, "
          f"{torch.get_num_threads()} threads", flush=True)
    bare_round()
    passes_s, total_s = [], []
    for cond in conds:
        edits = [cond.interventions([site], ds, [1.0], "all") for ds in dirs]
        t0 = time.perf_counter()
        outs = list(edited_passes(runner, edits))
        t1 = time.perf_counter()
        for out in outs:
            for eff, po in out.items():
                s, _ = score(po, pp, {}, ref, vocab)
                tidy(s, cond.key, cond.kind, cond.param, "d", eff, pp.group_name)
                per_prompt_rows(s, cond.key, "d", eff)
        t2 = time.perf_counter()
        passes_s.append((t1 - t0) / len(dirs))
        total_s.append((t2 - t0) / len(dirs))
        bare_round()
        print(f"  {cond.key}: {total_s[-1] * 1e3:.1f} ms per edited pass "
              f"({passes_s[-1] * 1e3:.1f} ms without scoring), bare "
              f"{statistics.median(bare[-1]) * 1e3:.1f} ms", flush=True)
    bare_c = [statistics.median(bare[i] + bare[i + 1]) for i in range(len(conds))]
    res = {
        "model": m.info.name, "prompts": len(pp), "passes_per_condition": len(dirs),
        "conditions": [c.key for c in conds], "threads": torch.get_num_threads(),
        "quick": a.quick, "stacked": hasattr(runner, "edited_many"),
        "bare_forward_s": statistics.median(x for r in bare for x in r), "bare_rounds_s": bare,
        "edited_pass_s": total_s, "edited_pass_unscored_s": passes_s,
        "edited_over_bare": sum(total_s) / sum(bare_c),
        "edited_unscored_over_bare": sum(passes_s) / sum(bare_c),
    }
    print(f"bare forward (median): {res['bare_forward_s'] * 1e3:.1f} ms")
    print(f"per edited pass / bare forward: {res['edited_over_bare']:.2f}x with scoring, "
          f"{res['edited_unscored_over_bare']:.2f}x without (target <= 1.5x)")
    write_json(a.out, {"results": res, "manifest": run_manifest(seed=0, dtype="float32")})
    print(f"written: {a.out}")


if __name__ == "__main__":
    main()
