"""The core numbers of one geometry run, from captured arrays (pure composition of ``probes``).

* :func:`value_layer_stats`: standardised PCA of one layer's final-token values [n, Hkv·dh]
  (PC1, PC1+PC2 with bootstrap CIs, participation ratio), Spearman ρ(PC1, target) with its CI
  and the cross-validated ridge-probe R² of each target (entropies in bits); given the prompts'
  final-token positions, also the partial |ρ(PC1, target | position)| and the probe R² of the
  target's position residual (:mod:`probes.position_control`).
* :func:`position_controls`: what a position-only predictor gives for each target.
* :func:`key_orthogonality_summary`: weight-based key orthogonality per layer with the analytic
  Gaussian √(2/(π·d_model)) and i.i.d. Gaussian W_K references; :func:`with_init_keys` sets the
  random-initialisation twin's numbers beside them.
* :func:`set_summary` and :func:`set_rows`: one prompt set's typed headline and its tidy rows.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, replace

import numpy as np

from ...probes import (
    AttentionEntropyProfile,
    CorrelationResult,
    PCASummary,
    ProbeConfig,
    correlation_with_ci,
    entropy_probe,
    fit_pca,
    gaussian_abs_cos_baseline,
    layer_key_orthogonality,
    partial_spearman,
    position_only_r2,
    position_residual,
    random_init_baseline,
    spearman,
    summarize_pca,
    validation_criteria,
)
from .measures import SetData
from .result import (
    NAN,
    Criteria,
    KeyLayer,
    KeyOrthogonality,
    LayerEntropy,
    LayerR2,
    MetricRow,
    PositionControl,
    Rho,
    SetSummary,
    abs_interval,
)


@dataclass(frozen=True)
class ValueLayerStats:
    """One layer, one prompt set. ``pc_coords`` [n, 2]: PC1/PC2 coordinates of each prompt;
    ``rho``, ``probe_r2`` and the position-controlled ``partial_abs_rho`` and
    ``probe_r2_beyond_position`` (empty without positions) are keyed by target name."""

    layer: int
    pca: PCASummary
    pc_coords: np.ndarray
    rho: dict[str, CorrelationResult]
    probe_r2: dict[str, float]
    partial_abs_rho: dict[str, float]
    probe_r2_beyond_position: dict[str, float]


def value_layer_stats(
    layer: int,
    values: np.ndarray,
    targets: Mapping[str, np.ndarray],
    n_resamples: int = 1000,
    probe: ProbeConfig | None = None,
    seed: int = 0,
    positions: np.ndarray | None = None,
) -> ValueLayerStats:
    """Statistics of values [n, d] against each target [n] (see the module doc); ``positions``
    [n]: each prompt's final-token position, for the position-controlled numbers."""
    x = np.asarray(values, dtype=np.float64).reshape(values.shape[0], -1)
    summary = summarize_pca(x, standardize=True, n_resamples=n_resamples, seed=seed)
    coords = fit_pca(x, standardize=True, n_components=2).transform(x)
    if coords.shape[1] < 2:
        coords = np.pad(coords, ((0, 0), (0, 2 - coords.shape[1])))
    probe = probe or ProbeConfig(seed=seed)
    rho, r2, partial, beyond = {}, {}, {}, {}
    for name, t in targets.items():
        rho[name] = correlation_with_ci(coords[:, 0], t, n_resamples=n_resamples, seed=seed)
        r2[name] = entropy_probe(x, t, probe).r2
        if positions is not None:
            partial[name] = abs(partial_spearman(coords[:, 0], t, positions))
            beyond[name] = entropy_probe(x, position_residual(t, positions), probe).r2
    return ValueLayerStats(layer, summary, coords, rho, r2, partial, beyond)


def position_controls(positions: np.ndarray, targets: Mapping[str, np.ndarray],
                      table_stats: ValueLayerStats, probe: ProbeConfig,
                      ) -> list[PositionControl]:
    """Per target: the position-only probe R² and |ρ(position, target)|, beside the Table-1
    layer's position-controlled numbers (``table_stats`` computed with ``positions``)."""
    out = []
    for name, t in targets.items():
        r2, design = position_only_r2(positions, t, probe)
        out.append(PositionControl(
            name, design, int(np.unique(positions).size), r2,
            abs(float(spearman(positions, t))), table_stats.partial_abs_rho.get(name, NAN),
            table_stats.probe_r2_beyond_position.get(name, NAN)))
    return out


def key_orthogonality_summary(
    key_weights: Sequence[np.ndarray], layers: Sequence[int], n_draws: int = 64, seed: int = 0,
    threshold: float = 0.20,
) -> KeyOrthogonality:
    """Per-layer mean |cos| between the ℓ2-normalised d_k columns of each head's W_K (each
    [Hkv, d_model, d_k]) with percentiles over heads, and the two chance baselines; the
    fraction of layers below Paper III's ``threshold``."""
    per_layer = layer_key_orthogonality(key_weights)
    _, d_model, d_k = np.asarray(key_weights[0]).shape
    rand = random_init_baseline(d_model, d_k, n_draws=n_draws, seed=seed)
    records = []
    for lo, L in zip(per_layer, layers, strict=True):
        p = lo.percentiles
        records.append(KeyLayer(int(L), lo.mean_abs_cos, lo.mean_signed_cos,
                                int(lo.head_abs_cos.size), p[5.0], p[25.0], p[50.0], p[75.0],
                                p[95.0]))
    means = np.array([r.mean_abs_cos for r in records])
    return KeyOrthogonality(
        per_layer=records, mean_abs_cos=float(means.mean()), threshold=threshold,
        fraction_layers_below=float((means < threshold).mean()),
        gaussian_baseline=gaussian_abs_cos_baseline(d_model),
        gaussian_baseline_d_head=gaussian_abs_cos_baseline(d_k),
        random_init_baseline=rand, d_model=int(d_model), d_head=int(d_k))


def with_init_keys(key: KeyOrthogonality, init: KeyOrthogonality) -> KeyOrthogonality:
    """``key`` with the random-initialisation twin's numbers beside it: its mean |cos| over
    layers and the fraction of layers whose trained keys are more orthogonal than the twin's
    same layer (a criterion that means the same at every width, unlike a fixed 0.20)."""
    below = [k.mean_abs_cos < i.mean_abs_cos
             for k, i in zip(key.per_layer, init.per_layer, strict=True)]
    return replace(key, init_mean_abs_cos=init.mean_abs_cos,
                   fraction_layers_below_init=float(np.mean(below)))


def set_summary(data: SetData, stats: list[ValueLayerStats],
                attention: AttentionEntropyProfile | None, key: KeyOrthogonality,
                table_layer: int, position: list[PositionControl] | None = None) -> SetSummary:
    """The typed headline of one prompt set at ``table_layer``, with Paper III's criteria and
    the ``position`` controls (:func:`position_controls`)."""
    st = next(s for s in stats if s.layer == table_layer)
    foc = attention.focusing if attention is not None else None
    crit = validation_criteria(
        pc1=st.pca.pc1.estimate, pc1_pc2=st.pca.pc1_pc2.estimate,
        key_orthogonality_per_layer=[r.mean_abs_cos for r in key.per_layer],
        focusing=None if foc is None else foc.estimate)
    ent = data.prompts["entropy_bits"]
    by_target = {t: [LayerR2(s.layer, s.probe_r2[t]) for s in stats] for t in data.targets}
    bayes = "bayes_entropy" in data.targets
    return SetSummary(
        prompt_set=data.name, n_prompts=len(data.prompts), pc1=st.pca.pc1,
        pc1_pc2=st.pca.pc1_pc2, participation_ratio=st.pca.participation_ratio,
        dim90=st.pca.dim90, entropy_bits_mean=float(ent.mean()),
        entropy_bits_range=(float(ent.min()), float(ent.max())),
        rho_pc1_entropy=Rho.of(st.rho["entropy"].spearman), probe_r2=by_target["entropy"],
        attention_entropy_bits=None if attention is None else [
            LayerEntropy(L, float(attention.layer_entropy[i]), float(attention.layer_low[i]),
                         float(attention.layer_high[i])) for i, L in enumerate(data.layers)],
        attention_focusing=foc,
        criteria=Criteria(crit.value_manifold, crit.key_orthogonality, crit.attention_focusing,
                          crit.key_layer_fraction, crit.n_met, crit.evaluated, crit.label),
        criteria_met=crit.label,
        rho_pc1_bayes_entropy=Rho.of(st.rho["bayes_entropy"].spearman) if bayes else None,
        probe_r2_bayes_entropy=by_target["bayes_entropy"] if bayes else None,
        position=position or [])


def set_rows(name: str, stats: list[ValueLayerStats], attention: AttentionEntropyProfile | None,
             targets: list[str], position: list[PositionControl] | None = None,
             ) -> list[MetricRow]:
    """The tidy rows of one prompt set's core numbers (see :data:`CORE_SPECS`); |ρ| carries
    the interval of |ρ| (PC1's sign is arbitrary, so no signed ρ is written). Position-only
    rows have ``reference="position"`` and no layer."""
    rows: list[MetricRow] = []
    for st in stats:
        for m, iv in (("pc1", st.pca.pc1), ("pc1_pc2", st.pca.pc1_pc2)):
            rows.append(MetricRow(name, st.layer, m, None, iv.estimate, iv.low, iv.high))
        rows.append(MetricRow(name, st.layer, "participation_ratio", None,
                              st.pca.participation_ratio))
        for t in targets:
            sp = st.rho[t].spearman
            rows += [MetricRow(name, st.layer, "abs_spearman_pc1", t, abs(sp.estimate),
                               *abs_interval(sp.low, sp.high)),
                     MetricRow(name, st.layer, "probe_r2", t, st.probe_r2[t])]
            if t in st.partial_abs_rho:
                rows += [MetricRow(name, st.layer, "partial_abs_spearman_pc1", t,
                                   st.partial_abs_rho[t]),
                         MetricRow(name, st.layer, "probe_r2_beyond_position", t,
                                   st.probe_r2_beyond_position[t])]
    for pc in position or []:
        rows += [MetricRow(name, None, "probe_r2", pc.target, pc.probe_r2,
                           reference="position"),
                 MetricRow(name, None, "abs_spearman_pc1", pc.target, pc.abs_rho,
                           reference="position")]
    if attention is not None:
        for i, st in enumerate(stats):
            rows.append(MetricRow(name, st.layer, "attention_entropy_bits", None,
                                  float(attention.layer_entropy[i]),
                                  float(attention.layer_low[i]), float(attention.layer_high[i])))
        f = attention.focusing
        rows.append(MetricRow(name, None, "attention_focusing", None, f.estimate, f.low, f.high))
    return rows
