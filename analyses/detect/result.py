"""The typed result of ``bayesgeom detect`` (:mod:`analyses.detect.run`): what ``summary.json``
holds, read back with :func:`records.read_result`."""

from __future__ import annotations

from dataclasses import asdict, dataclass

import pandas as pd

CONDITIONS = ("trained", "random_init")


@dataclass
class HeadFrame:
    """One head's frame (:class:`probes.key_frame.FrameScore` fields) in one condition."""

    condition: str
    layer: int
    head: int
    m: int
    d: int
    orthogonality: float
    chance: float
    effective_rank: float
    utilisation: float


@dataclass
class DetectResult:
    """What ``summary.json`` holds: per condition and layer the mean over heads, and the
    heads themselves."""

    model: str
    frame: str
    n_frame_tokens: int
    layers: list[int]
    n_kv_heads: int
    d_head: int
    heads: list[HeadFrame]
    wall_s: float = 0.0

    def layer_means(self) -> pd.DataFrame:
        """condition, layer, mean orthogonality, chance, mean utilisation."""
        df = pd.DataFrame([asdict(h) for h in self.heads])
        return df.groupby(["condition", "layer"], sort=False)[
            ["orthogonality", "chance", "utilisation"]].mean().reset_index()
