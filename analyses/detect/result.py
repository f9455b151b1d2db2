"""The typed result of ``bayesgeom detect`` (:mod:`analyses.detect.run`): what ``summary.json``
holds, read back with :func:`records.read_result`."""

from __future__ import annotations

from dataclasses import asdict, dataclass

import pandas as pd

from ...probes.key_frame import FrameScore
from ...windtunnel.learned import LearnedCheck

CONDITIONS = ("trained", "random_init")
#: the per-head columns :meth:`DetectResult.layer_means` averages
LAYER_COLUMNS = ("mean_abs_cos", "orthogonality", "chance", "ceiling", "vs_ceiling", "isotropy",
                 "isotropy_chance", "utilisation")


@dataclass(frozen=True)
class HeadFrame(FrameScore):
    """One head's frame (every :class:`probes.key_frame.FrameScore` field) in one condition
    (``"trained"`` or ``"random_init"``), at ``layer`` and kv ``head``."""

    condition: str
    layer: int
    head: int

    #: the columns that name a head, first in every table of heads
    KEYS = ("condition", "layer", "head")


@dataclass
class DetectResult:
    """What ``summary.json`` holds: the heads (each :class:`HeadFrame`, per condition), the
    frame (``n_frame_tokens`` keys in ``d_head`` dimensions) and the random-init twin's seed;
    :meth:`layer_means` gives per condition and layer the mean over heads."""

    model: str
    frame: str
    n_frame_tokens: int
    layers: list[int]
    n_kv_heads: int
    d_head: int
    heads: list[HeadFrame]
    twin_seed: int | None = None
    wall_s: float = 0.0
    #: a wind tunnel's learned check (None for other models): the verdicts stand behind it
    learned: LearnedCheck | None = None

    def layer_means(self) -> pd.DataFrame:
        """condition, layer and the means over its heads of: mean |cos|, the orthogonality
        score 1 − mean |cos| (the headline), its chance level (random vectors of the frame's
        shape), the Welch ceiling, the score ÷ ceiling, isotropy and its chance, utilisation."""
        df = pd.DataFrame([asdict(h) for h in self.heads])
        return df.groupby(["condition", "layer"], sort=False)[list(LAYER_COLUMNS)].mean(
            ).reset_index()

    @property
    def orthogonalisable(self) -> bool:
        """Whether the frame's m keys fit in d dimensions (m ≤ d) and so can be orthogonal."""
        return self.n_frame_tokens <= self.d_head
