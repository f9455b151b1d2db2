"""What a geometry run measures: metric specs, the data a measure reads, and the measure type.

Every metric has a :class:`MetricSpec` (name, display label, the definition it follows, whether
it is per layer, whether ``compare`` shows it and the reports draw it), so tables, ``compare``
and reports need no edit when a measure is added. The Paper III core (value PCA and ρ, the
entropy probe, attention entropy, weight-based key orthogonality; :data:`CORE_SPECS`) feeds the
typed headline and is run by :mod:`analyses.geometry.run` itself; further probes are
:class:`Measure` s registered in :data:`analyses.geometry.probes.MEASURES`, each reading what it
declares:

* ``scope="set"``: one prompt set's :class:`SetData` (final-token sites ``last_sites``, and
  ``every_sites`` captured at every token in a second pass when some measure asks for them);
* ``scope="model"``: the model and the analysed layers (weights);
* ``scope="sets"``: every prompt set's :class:`SetData` at once (cross-set comparisons).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import pandas as pd

from .result import MetricRow


@dataclass(frozen=True)
class MetricSpec:
    """How one metric is named, labelled and shown; ``control``: the metric is a control
    itself, so it is not rerun on the random-initialisation twin."""

    name: str
    label: str
    definition: str
    per_layer: bool = True
    compare: bool = False
    curve: bool = True
    control: bool = False  # a control itself (random features, shuffled targets, ...)


@dataclass
class SetData:
    """What measures read for one prompt set: ``last`` (final-token rows, prompt order) and
    ``every`` (every token, or None) activation stores, the sampled ``prompts`` and the entropy
    ``targets`` [n] (bits; ``"entropy"``: the model's, ``"bayes_entropy"``: the exact one)."""

    name: str
    prompts: pd.DataFrame
    targets: dict[str, np.ndarray]
    layers: list[int]
    table_layer: int
    last: Any
    every: Any | None = None
    seed: int = 0
    n_resamples: int = 1000

    @property
    def positions(self) -> np.ndarray:
        """Each prompt's final-token position [n] (0-based index in its own tokens)."""
        return self.last.position.numpy().astype(np.int64)

    def values(self, layer: int) -> np.ndarray:
        """Final-token values ``attn.layer.v`` [n, Hkv·dh] float64."""
        return self.last[f"attn.{layer}.v"].flatten(1).double().numpy()


@dataclass(frozen=True)
class Measure:
    """A pluggable probe: ``run(data)`` returns :class:`MetricRow` s of its ``specs``."""

    name: str
    scope: str
    specs: tuple[MetricSpec, ...]
    run: Callable[..., list[MetricRow]]
    last_sites: Callable[[list[int]], list[str]] = field(default=lambda layers: [])
    every_sites: Callable[[list[int]], list[str]] = field(default=lambda layers: [])
    applies: Callable[[Any], bool] = field(default=lambda model: True)


#: the Paper III core, computed by the pipeline itself
CORE_SPECS: tuple[MetricSpec, ...] = (
    MetricSpec("pc1", "value PC1 share", "Paper III: standardised PCA of final-token values"),
    MetricSpec("pc1_pc2", "value PC1+PC2 share",
               "Paper III: standardised PCA of final-token values"),
    MetricSpec("participation_ratio", "participation ratio",
               "Paper III: (Σλ)²/Σλ² of the standardised value covariance", curve=False),
    MetricSpec("abs_spearman_pc1", "|ρ(PC1, entropy)|",
               "Paper III, |Spearman ρ| (PC1's sign is arbitrary, so no sign is reported); "
               "reference position: |ρ(position, entropy)|"),
    MetricSpec("probe_r2", "entropy-probe R²", "ridge probe, 5-fold cross-validated R²; "
               "reference position: the same probe on a position-only design"),
    MetricSpec("partial_abs_spearman_pc1", "|ρ(PC1, entropy | position)|",
               "partial Spearman ρ given the final-token position (probes.position_control)"),
    MetricSpec("probe_r2_beyond_position", "probe R² of entropy beyond position",
               "the ridge probe of the entropy's position residual (probes.position_control)"),
    MetricSpec("attention_entropy_bits", "attention entropy at the final token (bits)",
               "Paper III: per head, then averaged"),
    MetricSpec("attention_focusing", "attention focusing",
               "Paper III: (H_first − H_last) / H_first", per_layer=False),
    MetricSpec("key_mean_abs_cos", "key orthogonality (mean |cos|)",
               "Paper III: W_K column cosines per head"),
    MetricSpec("key_p5", "key |cos|, 5th percentile over heads", "Paper III", curve=False),
    MetricSpec("key_p50", "key |cos|, median over heads", "Paper III", curve=False),
    MetricSpec("key_p95", "key |cos|, 95th percentile over heads", "Paper III", curve=False),
)
