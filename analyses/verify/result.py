"""The typed result of ``bayesgeom verify`` (:mod:`analyses.verify.run`): what
``summary.json`` holds."""

from __future__ import annotations

from dataclasses import dataclass


@dataclass
class OutputScore:
    """One source's output against the posterior: score = 1 − mean TV; KL in bits."""

    source: str
    consistency: float
    mean_tv: float
    mean_kl_bits: float


@dataclass
class HeadTracking:
    """One head: correlation of its hypothesis mass with the posterior, and its test."""

    layer: int
    head: int
    r: float
    p: float
    p_holm: float
    r_random_init: float
    mean_mass: float
    carries: bool


@dataclass
class ConsistencyResult:
    """What ``summary.json`` holds."""

    model: str
    task: str
    group_name: str
    n_prompts: int
    n_hypotheses: int
    outputs: list[OutputScore]
    heads: list[HeadTracking]
    carriers: list[str]
    wall_s: float = 0.0

    @property
    def consistency(self) -> float:
        return self.outputs[0].consistency
