"""The typed result of ``bayesgeom detect`` (:mod:`analyses.detect.run`): what ``summary.json``
holds, read back with :func:`records.read_result`."""

from __future__ import annotations

from dataclasses import asdict, dataclass

import pandas as pd

CONDITIONS = ("trained", "random_init")
#: the per-head columns :meth:`DetectResult.layer_means` averages
LAYER_COLUMNS = ("mean_abs_cos", "orthogonality", "chance", "ceiling", "vs_ceiling", "isotropy",
                 "isotropy_chance", "utilisation")


@dataclass
class HeadFrame:
    """One head's frame (:class:`probes.key_frame.FrameScore` fields) in one condition."""

    condition: str
    layer: int
    head: int
    m: int
    d: int
    mean_abs_cos: float
    orthogonality: float
    chance_abs_cos: float
    chance: float
    reduction_vs_random: float
    orthogonalisable: bool
    welch: float
    ceiling: float
    vs_ceiling: float
    isotropy: float
    isotropy_chance: float
    effective_rank: float
    utilisation: float


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
