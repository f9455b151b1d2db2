"""Human- and JSON-friendly views of sampled prompts with their exact posteriors
(``bayesgeom windtunnel sample``).

Token tasks show whole sequences with the posterior at every supervised position; text tasks
(SULA) show each prompt with its hypothesis words and the posterior over them.
"""

from __future__ import annotations

from typing import Any

from .seeds import Purpose, stream
from .task import Task, TaskBatch, TaskConfigError, TokenTask


def batch_records(task: TokenTask, batch: TaskBatch, digits: int = 6) -> list[dict[str, Any]]:
    """One record per sequence: tokens and, per supervised position, the posterior and entropy."""
    recs = []
    h0 = task.hyp_slice.start
    dense = batch.dense_posterior()  # built from the sparse form for a large V
    for i in range(batch.n):
        positions = []
        for j, p in enumerate(batch.query_pos.tolist()):
            positions.append({
                "position": p,
                "target_token": h0 + int(batch.targets[i, j]),
                "posterior": [round(float(x), digits) for x in dense[i, j]],
                "entropy_bits": round(float(batch.entropy_bits[i, j]), digits),
            })
        recs.append({"tokens": batch.input_ids[i].tolist(), "supervised": positions})
    return recs


#: the most values ``windtunnel sample`` prints (tokens and posterior entries, about 9
#: characters each: ~90 MB of text)
PRINT_LIMIT = 10_000_000


def check_sample_size(task: Task, n: int) -> None:
    """Refuse, before anything is drawn, a sample whose batch would not fit in memory
    (:meth:`TokenTask.check_memory`, the estimate ``train`` uses) or whose printout -- every
    token, and every supervised position's posterior over every hypothesis -- would exceed
    :data:`PRINT_LIMIT` values."""
    if not isinstance(task, TokenTask):
        return
    task.check_memory(n, task.batch_bytes(n, logits=False), "--n", logits=False)
    tokens, post = n * task.seq_len, n * task.n_queries * task.n_hypotheses
    if tokens + post > PRINT_LIMIT:
        sizes = [f"--{k.replace('_', '-')}" for k in task.size_options]
        raise TaskConfigError(
            f"windtunnel sample would print {tokens + post:,} values ({n} sequences of "
            f"{task.seq_len:,} tokens, {task.n_queries:,} positions x {task.n_hypotheses:,} "
            f"hypotheses of posterior each), more than {PRINT_LIMIT:,}; lower "
            f"{' or '.join([*sizes, '--n'])}")


def sample_records(task: Task, n: int, seed: int, digits: int = 6) -> dict[str, Any]:
    """``{"task", "seed", "sequences" | "prompts", ...}``: what ``sample --json`` prints,
    refused first if too large (:func:`check_sample_size`). Token tasks draw from stream
    ``(seed, INSPECT, 0)`` (:mod:`windtunnel.seeds`), not from a training or evaluation
    stream."""
    check_sample_size(task, n)
    out: dict[str, Any] = {"task": task.config(), "seed": seed}
    if isinstance(task, TokenTask):
        out["tokens"] = task.describe_tokens()
        batch = task.sample(n, stream(seed, Purpose.INSPECT))
        out["sequences"] = batch_records(task, batch, digits)
        return out
    pp = task.posterior_prompts(n, seed)
    out["hypotheses"] = list(pp.hyp_words or ())
    out["prompts"] = [
        {"prompt": str(pp.prompts[i]), pp.group_name: int(pp.group[i]),
         "posterior": [round(float(x), digits) for x in pp.bayes[i]],
         "entropy_bits": round(float(pp.h_bayes_bits[i]), digits)} for i in range(len(pp))]
    return out


def format_records(rec: dict[str, Any]) -> str:
    """The terminal view of :func:`sample_records`."""
    lines = []
    for i, r in enumerate(rec.get("sequences", [])):
        lines.append(f"sequence {i}: {len(r['tokens'])} tokens")
        lines.append("  tokens: " + " ".join(map(str, r["tokens"])))
        for s in r["supervised"]:
            support = sum(1 for x in s["posterior"] if x > 0)
            lines.append(f"  pos {s['position']:>3}  H_Bayes={s['entropy_bits']:.4f} bits  "
                         f"support={support:>2}  target={s['target_token']}")
    words = "/".join(rec.get("hypotheses", []))
    for r in rec.get("prompts", []):
        lines.append(f"{r['prompt']!r}\n  p({words}) = {r['posterior']}  "
                     f"H_Bayes={r['entropy_bits']:.4f} bits")
    return "\n".join(lines)
