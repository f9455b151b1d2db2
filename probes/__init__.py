"""Numerics on activation arrays and weight matrices; knows nothing about models.

Inputs are numpy arrays (any float dtype; accumulation is float64). Entropies are in bits;
variance ratios, focusing and thresholds are fractions. Batch PCA, ridge fits and the 80/20 split
come from scikit-learn; the information measures (entropy, KL, calibration, NaN-safe Pearson)
are :mod:`infotheory`'s, re-exported here.
"""

from typing import TYPE_CHECKING

from ..records.lazy import lazy_exports

if TYPE_CHECKING:
    from ..infotheory import (
        Calibration,
        calibration,
        calibration_by_group,
        entropy_bits_from_logits,
        entropy_bits_from_logprobs,
        entropy_bits_from_probs,
        kl_bits,
        kl_bits_from_logprobs,
        pearson,
        tvd,
    )
    from .attention_entropy import (
        AttentionEntropyProfile,
        attention_entropy_bits,
        attention_entropy_profile,
        focusing_fraction,
        head_entropies,
    )
    from .bootstrap import (
        Interval,
        bca_interval,
        jackknife_indices,
        mean_interval,
        percentile_interval,
        resample_indices,
    )
    from .cka import linear_cka
    from .correlation import CorrelationResult, correlation_with_ci, spearman
    from .dimensionality import dimension_at_variance, participation_ratio
    from .domain_manifold import (
        DomainManifold,
        ManifoldProjection,
        fit_domain_manifold,
        fit_domain_manifolds,
        manifold_angle_table,
        project_onto_manifold,
    )
    from .entropy_axis import AxisProvenance, EntropyAxis, fit_entropy_axis, prompt_set_hash
    from .entropy_probe import ProbeConfig, ProbeResult, entropy_probe, entropy_probe_table
    from .key_orthogonality import (
        LayerOrthogonality,
        RandomBaseline,
        TokenKeyOrthogonality,
        exact_abs_cos_expectation,
        gaussian_abs_cos_baseline,
        head_key_orthogonality,
        layer_key_orthogonality,
        random_init_baseline,
        split_key_weight,
        token_key_orthogonality,
    )
    from .multiple_testing import holm
    from .null_test import NullTest, null_test, parametric_p
    from .pca import PCAResult, fit_pca
    from .pca_summary import PCASummary, bootstrap_variance_ratios, summarize_pca
    from .position_control import (
        POSITION_CONFOUND_R2,
        partial_spearman,
        position_design,
        position_only_r2,
        position_residual,
    )
    from .qk_alignment import QKAlignment, qk_alignment, qk_alignment_profile, qk_cosines
    from .streaming_entropy_probe import StreamingEntropyProbe
    from .streaming_moments import StreamingMoments
    from .streaming_pca import StreamingPCA
    from .subspace_angles import principal_angles
    from .validation_criteria import CriteriaResult, CriteriaThresholds, validation_criteria
    from .value_manifold import ValueManifoldSummary, ordering_score, value_manifold_summary

__all__ = [
    "POSITION_CONFOUND_R2",
    "AttentionEntropyProfile",
    "AxisProvenance",
    "Calibration",
    "CorrelationResult",
    "CriteriaResult",
    "CriteriaThresholds",
    "DomainManifold",
    "EntropyAxis",
    "Interval",
    "LayerOrthogonality",
    "ManifoldProjection",
    "NullTest",
    "PCAResult",
    "PCASummary",
    "ProbeConfig",
    "ProbeResult",
    "QKAlignment",
    "RandomBaseline",
    "StreamingEntropyProbe",
    "StreamingMoments",
    "StreamingPCA",
    "TokenKeyOrthogonality",
    "ValueManifoldSummary",
    "attention_entropy_bits",
    "attention_entropy_profile",
    "bca_interval",
    "bootstrap_variance_ratios",
    "calibration",
    "calibration_by_group",
    "correlation_with_ci",
    "dimension_at_variance",
    "entropy_bits_from_logits",
    "entropy_bits_from_logprobs",
    "entropy_bits_from_probs",
    "entropy_probe",
    "entropy_probe_table",
    "exact_abs_cos_expectation",
    "fit_domain_manifold",
    "fit_domain_manifolds",
    "fit_entropy_axis",
    "fit_pca",
    "focusing_fraction",
    "gaussian_abs_cos_baseline",
    "head_entropies",
    "head_key_orthogonality",
    "holm",
    "jackknife_indices",
    "kl_bits",
    "kl_bits_from_logprobs",
    "layer_key_orthogonality",
    "linear_cka",
    "manifold_angle_table",
    "mean_interval",
    "null_test",
    "ordering_score",
    "parametric_p",
    "partial_spearman",
    "participation_ratio",
    "pearson",
    "percentile_interval",
    "position_design",
    "position_only_r2",
    "position_residual",
    "principal_angles",
    "project_onto_manifold",
    "prompt_set_hash",
    "qk_alignment",
    "qk_alignment_profile",
    "qk_cosines",
    "random_init_baseline",
    "resample_indices",
    "spearman",
    "split_key_weight",
    "summarize_pca",
    "token_key_orthogonality",
    "tvd",
    "validation_criteria",
    "value_manifold_summary",
]

#: every public name is imported on first use (records.lazy): importing a light submodule
#: (a config, a list of names) imports no torch
__getattr__ = lazy_exports(__name__)
