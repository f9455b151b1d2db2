"""The typed result of ``bayesgeom ablate`` (its ``summary.json``)."""

from __future__ import annotations

from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

from ...records import write_json


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


@dataclass
class AblationEval:
    """One task size (``label``: "K=20", or "trained" for the run's own task). Heads are
    named ``L<layer>H<head>``; ``frame_*``: the layer-0 head of largest zero-ablation ΔMAE,
    its ratio to the second-largest and its mean-ablation ΔMAE (None: not measured)."""

    label: str
    task_params: dict[str, Any]
    clean_mae_bits: float
    clean_accuracy: float
    frame_head: str | None = None
    frame_delta_mae_bits: float | None = None
    frame_ratio_to_second: float | None = None
    frame_mean_ablation_delta_mae_bits: float | None = None
    head_delta_median_bits: float | None = None
    worst_head: str | None = None
    worst_head_delta_mae_bits: float | None = None
    min_bypass_ratio: float | None = None
    embedding_only_mae_bits: float | None = None


@dataclass
class RetrainRow:
    """One model at one task size: entropy MAE (bits) and accuracy on held-out sequences."""

    model: str
    K: int | None
    mae_bits: float
    accuracy: float


@dataclass
class RetrainResult:
    """The retrained variant beside its control (module doc)."""

    intervention: str
    layers: list[int]
    ablated_run: str
    control_run: str
    steps: dict[str, int]
    stop_reasons: dict[str, str]
    rows: list[RetrainRow]


@dataclass
class AblateResult:
    """What ``bayesgeom ablate`` found (its ``summary.json``)."""

    model: str
    task: str
    n_sequences: int
    seed: int
    control: str
    evals: list[AblationEval] = field(default_factory=list)
    retrain: RetrainResult | None = None
    wall_s: float = 0.0
