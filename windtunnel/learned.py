"""Has a wind tunnel learned its task? The gate every verdict about a tunnel stands behind.

A geometry, steering or verification verdict about a model that never learned its task reads as
a finding about trained models and is not one. A tunnel **has learned** when its held-out
per-sample entropy MAE (Paper I, bits) is at most :data:`MARGIN` times that of its
context-blind baseline on the same held-out sequences (:mod:`windtunnel.baselines`):

* on the HMM (the paper's target), the **history-free filter** -- the current observation and
  the exact prior marginal, no earlier observation: what a model that ignores the history gets;
* on every other task, **chance** -- the uniform prediction over the task's hypotheses, which
  is what a model that ignores the context gets (the MLP-position baseline lands on it).

Half the baseline's error: a model that uses its context removes most of a context-blind
predictor's error (the README's 200-step HMM tunnel removes a fifth of chance's and none of the
history-free filter's; every trained tunnel in the docs removes more than nine tenths). The
number comes from the run's own final evaluation (``eval.json``, 2,000 sequences) where the
model is a finished run's final model; anything else (a checkpoint, a bare model folder) is
evaluated now on :data:`EVAL_N` sequences.

Example:
    >>> c = LearnedCheck("hmm", 0.331, 2000, "the run's final evaluation", "history-free filter",
    ...                  0.0797, {"chance (uniform prediction)": 0.413,
    ...                           "history-free filter": 0.0797})
    >>> c.learned
    False
    >>> print(c.reason())  # doctest: +NORMALIZE_WHITESPACE
    the tunnel has not learned its task: held-out entropy MAE 0.331 bits (the run's final
    evaluation, 2,000 sequences) is above half of its context-blind baseline, history-free
    filter at 0.0797 bits (chance (uniform prediction) 0.413 bits)
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

import torch

from .baselines import CHANCE, HISTORY_FREE, task_controls
from .evaluate import evaluate
from .runs import find_run, read_finished
from .task import TokenTask

#: a tunnel has learned when its MAE is at most this fraction of its baseline's
MARGIN = 0.5
#: held-out sequences a model without a recorded final evaluation is evaluated on
EVAL_N = 500
#: how the baselines are named in the check
BASELINE_NAMES = {CHANCE: "chance (uniform prediction)", HISTORY_FREE: "history-free filter"}


@dataclass(frozen=True)
class LearnedCheck:
    """The gate's reading of one tunnel.

    Attributes:
        task: the task's name.
        mae_bits: the tunnel's held-out per-sample entropy MAE (bits).
        n_sequences: held-out sequences it was measured on.
        source: where the number comes from (the run's final evaluation, or evaluated now).
        baseline: the name of the context-blind baseline it must beat (module doc).
        baseline_bits: that baseline's MAE on the same sequences (bits).
        controls: every no-training predictor measured, name -> MAE (bits).
    """

    task: str
    mae_bits: float
    n_sequences: int
    source: str
    baseline: str
    baseline_bits: float
    controls: dict[str, float] = field(default_factory=dict)

    @property
    def learned(self) -> bool:
        return bool(self.mae_bits <= MARGIN * self.baseline_bits)

    def numbers(self) -> str:
        """The tunnel's MAE beside chance and (HMM) the history-free filter."""
        others = ", ".join(f"{k} {v:.3g} bits" for k, v in self.controls.items())
        return f"held-out entropy MAE {self.mae_bits:.3g} bits ({others})"

    def reason(self) -> str:
        """One sentence: whether it learned and the numbers that decide it."""
        where = f"{self.source}, {self.n_sequences:,} sequences"
        rest = ", ".join(f"{k} {v:.3g} bits" for k, v in self.controls.items()
                         if k != self.baseline)
        rest = f" ({rest})" if rest else ""
        if self.learned:
            return (f"the tunnel has learned its task: held-out entropy MAE {self.mae_bits:.3g} "
                    f"bits ({where}) is below half of its context-blind baseline, "
                    f"{self.baseline} at {self.baseline_bits:.3g} bits{rest}")
        return (f"the tunnel has not learned its task: held-out entropy MAE "
                f"{self.mae_bits:.3g} bits ({where}) is above half of its context-blind "
                f"baseline, {self.baseline} at {self.baseline_bits:.3g} bits{rest}")


def baseline_key(task: TokenTask) -> str:
    """The control a tunnel of ``task`` must beat (module doc)."""
    paper_hmm = task.name == "hmm" and not getattr(task.cfg, "target_window", 0)
    return HISTORY_FREE if paper_hmm else CHANCE


def check_learned(path: str | Path, model: torch.nn.Module, task: TokenTask,
                  progress: bool = False) -> LearnedCheck:
    """The :class:`LearnedCheck` of the tunnel at ``path`` (a run folder, its ``model/``, a
    checkpoint in it or a bare model folder), whose loaded ``model`` and ``task`` are given:
    the final evaluation's number when ``path`` is a finished run's final model, else
    ``model`` evaluated now on :data:`EVAL_N` sequences (seed: the run's, else 0)."""
    path = Path(path)
    rec = find_run(path)
    seed = rec.seed if rec is not None and rec.seed is not None else 0
    final = rec is not None and rec.finished and path.resolve() in (
        rec.path.resolve(), rec.model_dir.resolve())
    if final:
        summary, _ = read_finished(rec.path)  # checksums verified
        mae, n = float(summary["entropy_mae_bits"]), int(summary.get("n_sequences", 0))
        source = "the run's final evaluation"
    if not final or n < 1:
        rep = evaluate(model, task, EVAL_N, seed, logit_lens=False, progress=progress)
        mae, n, source = rep.entropy_mae_bits, rep.n_sequences, "evaluated now"
    cfg = {k: v for k, v in task.config().items() if k != "task"}
    raw = task_controls(task.name, cfg, seed, n, windows=())
    controls = {BASELINE_NAMES.get(k, k): v for k, v in raw.items()}
    key = baseline_key(task)
    return LearnedCheck(task.name, mae, n, source, BASELINE_NAMES[key], raw[key], controls)
