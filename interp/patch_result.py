"""The result of a patching method: one value per cell, pair and metric, beside the unpatched
target and source scores of every pair (the baselines a patch moves between).

Activation, attribution and path patching return the same type over the same cells, so two
methods compare cell for cell (``a.values`` against ``b.values``). Attribution's values are the
target score plus its first-order estimate of the patch's change, so ``effect`` means the same
for both.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

import torch

from .errors import InterpError
from .patch_cells import PatchCell

if TYPE_CHECKING:
    import pandas as pd


@dataclass(frozen=True)
class PatchResult:
    """``values`` [n_cells, B, m] float64: the score with each cell patched, per pair ``B`` and
    metric ``m`` (named by ``metrics``); ``target`` and ``source`` [B, m]: the unpatched runs'
    scores; ``method``: "activation", "attribution" or "path" (then ``receiver`` names where the
    sender's direct path ends: ``"logits"`` or ``"resid_pre.L"``).

    Example:
        >>> import torch
        >>> r = PatchResult("activation", (PatchCell("resid_pre.0", 0),), ("logit_diff",),
        ...                 torch.tensor([[[1.5], [0.5]]]), torch.tensor([[1.0], [0.0]]),
        ...                 torch.tensor([[2.0], [1.0]]))
        >>> r.effect("logit_diff").tolist()
        [[0.5, 0.5]]
        >>> r.to_frame()[["site", "pair", "logit_diff", "target_logit_diff"]].values.tolist()
        [['resid_pre.0', 0, 1.5, 1.0], ['resid_pre.0', 1, 0.5, 0.0]]
    """

    method: str
    cells: tuple[PatchCell, ...]
    metrics: tuple[str, ...]
    values: torch.Tensor
    target: torch.Tensor
    source: torch.Tensor
    receiver: str | None = None

    def __post_init__(self) -> None:
        n, m = len(self.cells), len(self.metrics)
        B = int(self.target.shape[0])
        if tuple(self.values.shape) != (n, B, m) or tuple(self.source.shape) != (B, m):
            raise InterpError(f"values {tuple(self.values.shape)}, target "
                              f"{tuple(self.target.shape)} and source {tuple(self.source.shape)} "
                              f"do not fit {n} cells and {m} metrics")

    @property
    def n_pairs(self) -> int:
        return int(self.target.shape[0])

    def _col(self, metric: str | None) -> int:
        if metric is None:
            if len(self.metrics) != 1:
                raise InterpError(f"name a metric: one of {', '.join(self.metrics)}")
            return 0
        if metric not in self.metrics:
            raise InterpError(f"no metric {metric!r}; metrics: {', '.join(self.metrics)}")
        return self.metrics.index(metric)

    def value(self, metric: str | None = None) -> torch.Tensor:
        """[n_cells, B] values of one metric (the only one when None)."""
        return self.values[..., self._col(metric)]

    def effect(self, metric: str | None = None) -> torch.Tensor:
        """[n_cells, B]: patched minus target score (what the patch changed)."""
        j = self._col(metric)
        return self.values[..., j] - self.target[None, :, j]

    def to_frame(self) -> pd.DataFrame:
        """One row per (cell, pair): ``site``, ``layer``, ``head`` and ``position`` (nullable
        integers; missing = every head / position), ``pair``, each metric, and each metric's
        unpatched ``target_<metric>`` and ``source_<metric>``."""
        import pandas as pd

        n, B = len(self.cells), self.n_pairs
        cols: dict[str, object] = {
            "site": [c.site for c in self.cells for _ in range(B)],
            "layer": [c.layer for c in self.cells for _ in range(B)],
            "head": pd.array([c.head for c in self.cells for _ in range(B)], dtype="Int64"),
            "position": pd.array([c.position for c in self.cells for _ in range(B)],
                                 dtype="Int64"),
            "pair": list(range(B)) * n,
        }
        vals = self.values.detach().cpu().double().reshape(n * B, -1).numpy()
        base = {"target": self.target, "source": self.source}
        for j, m in enumerate(self.metrics):
            cols[m] = vals[:, j]
        for role, t in base.items():
            rows = t.detach().cpu().double().numpy()
            for j, m in enumerate(self.metrics):
                cols[f"{role}_{m}"] = list(rows[:, j]) * n
        return pd.DataFrame(cols)
