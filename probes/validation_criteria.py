"""Paper III's three validation criteria (§4.4) and how many of them a model meets.

1. value manifold: PC1 > 30 % or PC1+PC2 > 30 % of the (standardised) variance;
2. key orthogonality: mean off-diagonal |cos| < 0.20 in ≥ 50 % of layers;
3. attention focusing: > 30 % entropy reduction from the first layer to the last.
3/3 is the "full signature", 2/3 "partial". All quantities are fractions (0.30, not 30).
A criterion whose input is None is not evaluated and does not count in the denominator.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import asdict, dataclass
from typing import Any

import numpy as np


@dataclass(frozen=True)
class CriteriaThresholds:
    """Paper III's thresholds, as fractions."""

    value_manifold: float = 0.30
    key_orthogonality: float = 0.20
    key_layer_fraction: float = 0.50
    focusing: float = 0.30


@dataclass(frozen=True)
class CriteriaResult:
    """Which criteria hold (None = not evaluated) and the count, e.g. ``label == "2/3"``."""

    value_manifold: bool | None
    key_orthogonality: bool | None
    attention_focusing: bool | None
    key_layer_fraction: float | None
    thresholds: CriteriaThresholds

    @property
    def evaluated(self) -> int:
        return sum(v is not None for v in self._flags())

    @property
    def n_met(self) -> int:
        return sum(v is True for v in self._flags())

    @property
    def label(self) -> str:
        return f"{self.n_met}/{self.evaluated}"

    def _flags(self) -> tuple[bool | None, bool | None, bool | None]:
        return (self.value_manifold, self.key_orthogonality, self.attention_focusing)

    def to_dict(self) -> dict[str, Any]:
        d = asdict(self)
        d.update(n_met=self.n_met, evaluated=self.evaluated, label=self.label)
        return d


def validation_criteria(
    pc1: float | None = None,
    pc1_pc2: float | None = None,
    key_orthogonality_per_layer: Sequence[float] | None = None,
    focusing: float | None = None,
    thresholds: CriteriaThresholds | None = None,
) -> CriteriaResult:
    """Evaluate the criteria from PC ratios, per-layer mean |cos| and the focusing fraction."""
    th = thresholds or CriteriaThresholds()
    vm: bool | None = None
    if pc1 is not None or pc1_pc2 is not None:
        vm = bool(
            (pc1 is not None and pc1 > th.value_manifold)
            or (pc1_pc2 is not None and pc1_pc2 > th.value_manifold)
        )
    ko: bool | None = None
    frac: float | None = None
    if key_orthogonality_per_layer is not None:
        k = np.asarray(key_orthogonality_per_layer, dtype=np.float64).ravel()
        if k.size == 0:
            raise ValueError("key_orthogonality_per_layer is empty")
        frac = float((k < th.key_orthogonality).mean())
        ko = frac >= th.key_layer_fraction
    foc = None if focusing is None else bool(focusing > th.focusing)
    return CriteriaResult(vm, ko, foc, frac, th)
