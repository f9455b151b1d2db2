"""The typed result of ``bayesgeom extrapolate`` (:mod:`analyses.extrapolate.run`)."""

from __future__ import annotations

import math
from dataclasses import dataclass

#: the BAM paper's headline (arXiv 2505.22842, ICLR 2026), printed beside our table
BAM_CLAIM = ("BAM (Bianchessi et al.): accurate retrieval at 500x the training length, "
             "> 25x the previous state of the art (passkey retrieval, pretrained LMs)")


@dataclass
class SchemeSummary:
    """One positional scheme: accuracy at L and at the longest length, and its ratio."""

    arch: str
    accuracy_at_1: float
    accuracy_at_max: float
    ratio: int


@dataclass
class ExtrapolateResult:
    """What ``summary.json`` holds."""

    length: int
    multiples: list[int]
    tolerance: float
    noise: float
    steps: int
    preset: str
    n_eval: int
    schemes: list[SchemeSummary]
    bam_claim: str
    wall_s: float
    #: 1 / V, the accuracy of guessing (NaN in runs written before it was recorded)
    chance: float = math.nan
