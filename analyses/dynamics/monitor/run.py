"""The Paper II training-dynamics monitor: a :class:`windtunnel.train_config.TrainingMonitor`
that ``bayesgeom windtunnel train --monitor-every N`` plugs into training (issue 13).

Every N steps it reads, on one fixed held-out batch (:data:`MONITOR_BATCH` sequences from the
run seed's ``monitor`` stream, which training never draws), each attention head's tensors and
their gradients under the task's own training loss
(:func:`interp.attention_taps.attention_gradients` with
:func:`windtunnel.training.task_loss`), and compares them with what it read N steps earlier.
The definitions are ours ("Paper II monitor"; the paper gives no numeric ones). Per layer L and
head h, for the interval from step t−N (start) to step t (end), logged at t as
``dyn.L<L>.H<h>.<metric>``:

* ``score_follow``: cosine between the actual change of the row-centred pre-softmax scores,
  S = c · q kᵀ on the monitor batch, allowed entries only, each row centred over its allowed
  entries (:func:`probes.update_alignment.centre_rows`), and the routing law's descent
  direction at the start, −∂L/∂s_ij = −α_ij (b_ij − E_{α_i}[b]) with b_ij = u_iᵀv_j
  (:func:`probes.routing_law.score_gradient`): do score updates follow advantage?
* ``value_follow``: cosine between the actual change of the head's values {v_j} [keys × dh]
  and −Σ_i α_ij u_i at the start (:func:`probes.routing_law.value_gradient`): do value updates
  follow the responsibility-weighted upstream error?
* ``pattern_change``: mean over query rows of the total-variation distance ½ Σ_j |α'_ij − α_ij|
  between the start and end attention rows (in [0, 1]);
* ``value_change``: ‖V_end − V_start‖_F / ‖V_start‖_F over the batch's values;
* ``value_pc1``, ``value_pr``, ``value_dim90``: centred PCA of the head's value vectors {v_j}
  over every key position of the batch at the end: the first component's share of the
  variance, the participation ratio (Σλ)²/Σλ², and the number of components reaching 90 %;
* ``dyn.loss``: the task loss (nats) of the monitor batch at the end.

Value metrics are per kv head (the query head, without grouped-query attention). Cosines are
taken over every allowed entry of a head at once (all rows and sequences); a cosine of 0
means the change is unrelated to the prediction, 1 that it is exactly along it. The actual
change comes from N AdamW steps on fresh batches, not from one gradient step on this batch,
and moves the scores and values also through every earlier layer, so values well below 1 are
expected; the sign and the trend are the reading.

Reading the model changes nothing of training: the batch has its own stream, no global
random state is used, autograd.grad leaves ``.grad`` alone and the train/eval mode is
restored. Its state at a step depends on the weights alone, so a resumed run (checkpoints fall
on monitor steps) logs the same rows.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

import numpy as np
import pandas as pd
from transformers import PreTrainedModel

from .... import interp
from ....interp.attention_taps import HeadTensors, attention_gradients
from ....probes import routing_law as rl
from ....probes import update_alignment as ua
from ....records import write_table
from ....windtunnel.architectures import attention_archs
from ....windtunnel.seeds import Purpose, stream
from ....windtunnel.task import TaskBatch, TaskConfigError, TokenTask
from ....windtunnel.train_config import TrainConfig
from ....windtunnel.training import task_loss
from .report import write_report
from .result import LOSS_COLUMN, column, tidy_log

#: sequences in the monitor batch (part of what the monitor's numbers mean: keep it fixed
#: across a resume)
MONITOR_BATCH = 64
#: the definitions above, for the report
DEFINITIONS = " ".join(" ".join((__doc__ or "").split("\n\n")[1:4]).split())


@dataclass(frozen=True)
class LayerState:
    """One layer at one step, float64. ``scores``, ``score_step``, ``pattern`` [N, H, T, Tk]
    (centred scores, −∂L/∂S, α); ``values``, ``value_step`` [N, Hkv, Tk, dh] (v, −∂L/∂v);
    ``allowed`` [N, 1, T, Tk]; ``keys`` [N, 1, Tk, 1] (real key positions)."""

    scores: np.ndarray
    score_step: np.ndarray
    pattern: np.ndarray
    values: np.ndarray
    value_step: np.ndarray
    allowed: np.ndarray
    keys: np.ndarray


def layer_state(t: HeadTensors, kv_of_query: tuple[int, ...], n_kv: int) -> LayerState:
    """The monitor's view of one layer's taps: centred scores, α, v and the routing law's
    descent directions for the scores and the values."""
    f = {n: getattr(t, n).numpy().astype(np.float64) for n in ("q", "k", "v", "pattern",
                                                               "z_grad")}
    allowed = t.allowed.numpy()
    b = rl.compatibilities(f["z_grad"], f["v"], kv_of_query)
    return LayerState(
        scores=ua.centre_rows(ua.head_scores(f["q"], f["k"], t.scaling, kv_of_query), allowed),
        score_step=-rl.score_gradient(f["pattern"], b),
        pattern=f["pattern"],
        values=f["v"],
        value_step=-rl.value_gradient(f["pattern"], f["z_grad"], kv_of_query, n_kv),
        allowed=allowed,
        keys=ua.real_keys(allowed),
    )


def interval_metrics(a: LayerState, b: LayerState) -> dict[str, np.ndarray]:
    """The per-head metrics (module doc) of the interval from state ``a`` to state ``b``:
    name -> [H] (query heads) or [Hkv] (value metrics)."""
    pcas = ua.head_value_pca(b.values, b.keys)
    return {
        "score_follow": ua.head_cosine(b.scores - a.scores, a.score_step, a.allowed),
        "value_follow": ua.head_cosine(b.values - a.values, a.value_step, a.keys),
        "pattern_change": ua.row_tv_distance(a.pattern, b.pattern, a.allowed),
        "value_change": ua.relative_change(a.values, b.values, a.keys),
        "value_pc1": np.array([p.explained_variance_ratio[0] for p in pcas]),
        "value_pr": np.array([p.participation_ratio() for p in pcas]),
        "value_dim90": np.array([p.dimension_at_variance(0.9) for p in pcas], dtype=float),
    }


class DynamicsMonitor:
    """The monitor (module doc). ``batch_size`` sequences; ``layers`` as
    :func:`interp.resolve_layers` (None: all)."""

    def __init__(self, batch_size: int = MONITOR_BATCH, layers: list[int] | None = None):
        if batch_size < 1:
            raise TaskConfigError(f"the monitor batch needs >= 1 sequence, got {batch_size}")
        self.batch_size = batch_size
        self.layers = layers
        self._task: TokenTask | None = None
        self._batch: TaskBatch | None = None
        self._state: dict[int, LayerState] | None = None

    @property
    def batch(self) -> TaskBatch | None:
        """The monitor batch (after :meth:`start`)."""
        return self._batch

    def check(self, cfg: TrainConfig) -> None:
        if cfg.arch not in attention_archs():
            raise TaskConfigError(f"--monitor-every reads attention heads; arch {cfg.arch!r} "
                                  f"has none (use one of {', '.join(attention_archs())})")

    def start(self, model: PreTrainedModel, task: TokenTask, seed: int, step: int) -> None:
        self._task = task
        self._batch = task.sample(self.batch_size, stream(seed, Purpose.MONITOR, 0))
        self._state, _ = self._read(model)

    def __call__(self, model: PreTrainedModel, step: int) -> dict[str, float]:
        if self._state is None:
            raise RuntimeError("DynamicsMonitor called before start()")
        state, loss = self._read(model)
        row: dict[str, float] = {LOSS_COLUMN: loss}
        for layer, b in state.items():
            for metric, per_head in interval_metrics(self._state[layer], b).items():
                row.update({column(layer, h, metric): float(x) for h, x in enumerate(per_head)})
        self._state = state
        return row

    def finish(self, out: Path, log: pd.DataFrame) -> None:
        """Write ``dynamics.csv`` (tidy) and ``dynamics.html`` into the run folder."""
        tidy = tidy_log(log)
        write_table(out / "dynamics.csv", tidy)
        name = f"{out.name}" if self._task is None else f"{out.name} ({self._task.name})"
        write_report(out / "dynamics.html", tidy, name, DEFINITIONS,
                     {"monitor_batch": self.batch_size, "layers": self.layers})

    def _read(self, model: PreTrainedModel) -> tuple[dict[int, LayerState], float]:
        """Every monitored layer's state on the monitor batch, and its loss (nats)."""
        assert self._task is not None and self._batch is not None
        task, was_training = self._task, model.training
        batch = self._batch.to(next(model.parameters()).device)
        try:
            m = interp.InterpModel(model, task=task, name="training")  # sets eval mode
            g = attention_gradients(m, layers=self.layers,
                                    loss_fn=lambda: task_loss(model, task, batch))
        finally:
            model.train(was_training)
        geo = g.geometry
        return ({L: layer_state(t, geo.kv_head_of_query, geo.n_kv_heads)
                 for L, t in g.layers.items()}, g.loss)
