"""Human- and JSON-friendly views of sampled sequences with their exact posteriors."""

from __future__ import annotations

from typing import Any

from windtunnel.task import Task, TaskBatch


def batch_records(task: Task, batch: TaskBatch, digits: int = 6) -> list[dict[str, Any]]:
    """One record per sequence: tokens and, per supervised position, the posterior and entropy."""
    recs = []
    h0 = task.hyp_slice.start
    for i in range(batch.n):
        positions = []
        for j, p in enumerate(batch.query_pos.tolist()):
            positions.append(
                {
                    "position": p,
                    "target_token": h0 + int(batch.targets[i, j]),
                    "posterior": [round(float(x), digits) for x in batch.posterior[i, j]],
                    "entropy_bits": round(float(batch.entropy_bits[i, j]), digits),
                }
            )
        recs.append({"tokens": batch.input_ids[i].tolist(), "supervised": positions})
    return recs


def format_records(task: Task, records: list[dict[str, Any]]) -> str:
    lines = []
    for i, r in enumerate(records):
        lines.append(f"sequence {i}: {len(r['tokens'])} tokens")
        lines.append("  tokens: " + " ".join(map(str, r["tokens"])))
        for s in r["supervised"]:
            support = sum(1 for x in s["posterior"] if x > 0)
            lines.append(
                f"  pos {s['position']:>3}  H_Bayes={s['entropy_bits']:.4f} bits  "
                f"support={support:>2}  target={s['target_token']}"
            )
    return "\n".join(lines)
