"""Paper I's ablation protocols (spec §1.9) on a wind-tunnel model, as interventions through
:mod:`interp.ablations` -- the model's code and weights are never edited.

Every condition is evaluated against the exact posterior with
:func:`windtunnel.evaluate.evaluate` on the same held-out sequences as the clean model, and is
reported as its entropy MAE (bits) and ΔMAE = MAE(ablated) − MAE(clean):

Conditions a model has no site for are left out (a recurrent model: no heads and no
zero-attention rows; an LSTM: no zero-FFN either -- its blocks have no sublayer).

* ``heads``: each head of layer 0 zeroed alone (``attn.0.z``); the *frame head* is the argmax of
  ΔMAE (the paper's "hypothesis-frame head"), with its ratio to the second-strongest head.
* ``layers``: per layer L, ``bypass`` (block output := block input), ``zero_attn``
  (``attn_out.L`` := 0) and ``zero_ffn`` (``mlp_out.L`` := 0).
* ``cumulative``: layers 0..L bypassed, for each L (the last row is the embedding-only model).

    from analyses.ablations import run_ablations
    res = run_ablations("runs/bijection")      # a run directory, or an interp.InterpModel
    print(res.table())
"""

from __future__ import annotations

from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

import interp
from interp.ablations import Ablation, BypassLayer, ZeroHead, ZeroSublayer, ablate
from records import write_json
from windtunnel.evaluate import evaluate
from windtunnel.task import TokenTask

__all__ = ["AblationResult", "evaluate_ablated", "run_ablations"]


@dataclass
class AblationResult:
    """Entropy MAE (bits) of the clean model and of every ablation (see the module doc)."""

    model: str
    n_sequences: int
    seed: int
    clean_mae_bits: float
    heads: list[dict[str, Any]] = field(default_factory=list)
    frame_head: int | None = None
    frame_ratio: float | None = None
    layers: list[dict[str, Any]] = field(default_factory=list)
    cumulative: list[dict[str, Any]] = field(default_factory=list)

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)

    def write_json(self, path: str | Path) -> Path:
        """The result as strict JSON, written atomically (:func:`records.write_json`)."""
        return write_json(path, self.to_dict())

    def table(self) -> str:
        """A plain-text table of every condition."""
        c = self.clean_mae_bits
        rows = [f"ablations of {self.model} ({self.n_sequences} held-out sequences, seed "
                f"{self.seed}); entropy MAE in bits, clean {c:.4g}",
                f"{'condition':<24}{'MAE':>12}{'ΔMAE':>12}{'× clean':>10}"]

        def line(name: str, mae: float) -> str:
            ratio = mae / c if c > 0 else float("inf")
            return f"{name:<24}{mae:>12.4g}{mae - c:>+12.4g}{ratio:>10.3g}"

        for h in self.heads:
            mark = "  (frame head)" if h["head"] == self.frame_head else ""
            rows.append(line(f"zero head L0H{h['head']}", h["mae_bits"]) + mark)
        for r in self.layers:
            for k in ("bypass", "zero_attn", "zero_ffn"):
                if r.get(k) is not None:
                    rows.append(line(f"{k} L{r['layer']}", r[k]))
        for r in self.cumulative:
            rows.append(line(f"bypass L0..L{r['through']}", r["mae_bits"]))
        if self.frame_ratio is not None:
            rows.append(f"frame head L0H{self.frame_head}: ΔMAE {self.frame_ratio:.3g}× the "
                        "second-strongest layer-0 head")
        return "\n".join(rows)


def evaluate_ablated(model: interp.InterpModel, task: TokenTask, *ablations: Ablation,
                     n: int = 2000, seed: int = 0) -> float:
    """Entropy MAE (bits) of ``model`` with ``ablations`` active (none: the clean model)."""
    if not ablations:
        return evaluate(model.hf, task, n=n, seed=seed, logit_lens=False).entropy_mae_bits
    with ablate(model, *ablations):
        return evaluate(model.hf, task, n=n, seed=seed, logit_lens=False).entropy_mae_bits


def _has_site(model: interp.InterpModel, name: str) -> bool:
    """Whether ``name`` can be hooked on ``model`` (a recurrent model has no attention sites;
    an LSTM has no sublayer sites)."""
    try:
        model.add_hook(name, lambda x: None).remove()
    except interp.InterpError:
        return False
    return True


def run_ablations(spec: str | Path | interp.InterpModel, task: TokenTask | None = None, *,
                  n: int = 2000, seed: int = 0, heads: bool = True, layers: bool = True,
                  cumulative: bool = True) -> AblationResult:
    """Run the protocol on a wind-tunnel run directory (or a loaded model with its task)."""
    from analyses.models import open_model

    model = open_model(spec)
    task = task or getattr(model, "task", None)
    if task is None:
        raise interp.InterpError(f"{model.info.name}: no task attached; pass task=")
    clean = evaluate_ablated(model, task, n=n, seed=seed)
    res = AblationResult(str(getattr(model.info, "name", spec)), n, seed, clean)
    n_layers = model.n_layers
    attn = _has_site(model, "attn_out.0")
    if heads and attn and _has_site(model, "attn.0.z"):
        n_heads = model.geometry.n_heads
        for h in range(n_heads):
            mae = evaluate_ablated(model, task, ZeroHead("attn.0.z", h), n=n, seed=seed)
            res.heads.append({"head": h, "mae_bits": mae, "delta_mae_bits": mae - clean})
        deltas = sorted(((r["delta_mae_bits"], r["head"]) for r in res.heads), reverse=True)
        res.frame_head = deltas[0][1]
        if len(deltas) > 1 and deltas[1][0] > 0:
            res.frame_ratio = deltas[0][0] / deltas[1][0]
    if layers:
        mlp = _has_site(model, "mlp_out.0")
        for L in range(n_layers):
            row: dict[str, Any] = {"layer": L}
            row["bypass"] = evaluate_ablated(model, task, BypassLayer(L), n=n, seed=seed)
            row["zero_attn"] = (evaluate_ablated(model, task, ZeroSublayer(f"attn_out.{L}"),
                                                 n=n, seed=seed) if attn else None)
            row["zero_ffn"] = (evaluate_ablated(model, task, ZeroSublayer(f"mlp_out.{L}"),
                                                n=n, seed=seed) if mlp else None)
            res.layers.append(row)
    if cumulative:
        for L in range(n_layers):
            mae = evaluate_ablated(model, task, BypassLayer(list(range(L + 1))), n=n, seed=seed)
            res.cumulative.append({"through": L, "mae_bits": mae, "delta_mae_bits": mae - clean})
    return res
