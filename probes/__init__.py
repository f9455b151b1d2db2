"""Numerics on activation arrays and weight matrices; knows nothing about models.

Inputs are numpy arrays (any float dtype; accumulation is float64). Entropies are in bits;
variance ratios, focusing and thresholds are fractions. Batch PCA, ridge fits and the 80/20 split
come from scikit-learn; the information measures (entropy, KL, calibration, NaN-safe Pearson)
are :mod:`infotheory`'s, re-exported here. Every public function and class of every module is
exported here (``from bayesgeom.probes import score_frame``), each imported on first use.
"""

from typing import TYPE_CHECKING

from ..records.lazy import lazy_exports

if TYPE_CHECKING:
    from ..infotheory.calibration import Calibration, calibration, calibration_by_group
    from ..infotheory.measures import (
        entropy_bits_from_logits,
        entropy_bits_from_logprobs,
        entropy_bits_from_probs,
        kl_bits,
        kl_bits_from_logprobs,
        pearson,
        tvd,
    )
    from .arrays import as_matrix, as_vector
    from .attention_entropy import (
        AttentionEntropyProfile,
        attention_entropy_bits,
        attention_entropy_profile,
        focusing_fraction,
        head_entropies,
    )
    from .attention_rows import attention_mass, content_masks, js_divergence_bits
    from .bootstrap import (
        Interval,
        acceleration,
        bca_interval,
        bca_levels,
        excludes,
        jackknife_indices,
        make_rng,
        mean_interval,
        percentile_interval,
        resample_indices,
    )
    from .cka import linear_cka
    from .cluster_separation import label_silhouette
    from .correlation import CorrelationResult, average_ranks, correlation_with_ci, spearman
    from .decay_fit import (
        CriticalLength,
        DecayFit,
        bootstrap_critical_length,
        decay_curve,
        fit_decay,
    )
    from .dimensionality import dimension_at_variance, explained_variance_ratio, participation_ratio
    from .domain_manifold import (
        DomainManifold,
        ManifoldProjection,
        fit_domain_manifold,
        fit_domain_manifolds,
        manifold_angle_table,
        project_onto_manifold,
    )
    from .effective_number import (
        EffectiveNumber,
        EffectNumber,
        effect_effective_number,
        effective_number,
        independent_reference,
    )
    from .energy_controls import ControlDraw, energy_matched_controls, independent_energy_controls
    from .energy_moments import EnergyMoments, unit
    from .entropy_axis import AxisProvenance, EntropyAxis, fit_entropy_axis, prompt_set_hash
    from .entropy_probe import (
        ProbeConfig,
        ProbeResult,
        entropy_probe,
        entropy_probe_table,
        r2_score,
        select_alpha,
    )
    from .key_frame import (
        FrameScore,
        effective_rank,
        frame_orthogonality,
        isotropy,
        mean_abs_cos,
        random_abs_cos,
        random_isotropy,
        score_frame,
        welch_bound,
    )
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
    from .multiple_testing import holm, holm_reach
    from .null_test import NullTest, normality_p, null_test, parametric_p, predictive_p
    from .pca import (
        PCAResult,
        fit_pca,
        orient_components,
        pca_from_covariance,
        standardization_scale,
    )
    from .pca_summary import (
        PCASummary,
        bootstrap_variance_ratios,
        summarize_pca,
        variance_ratios_of_rows,
    )
    from .plateau import plateau_step
    from .position_control import (
        POSITION_CONFOUND_R2,
        partial_spearman,
        position_design,
        position_only_r2,
        position_residual,
    )
    from .posterior_consistency import (
        attention_posterior_tv,
        consistency_score,
        coverage,
        defined_prompts,
        hypothesis_mass,
        output_deviation,
        permuted_within_groups,
        tracking_correlation,
        undefined_reason,
        uniform_attention_tv,
    )
    from .qk_alignment import QKAlignment, qk_alignment, qk_alignment_profile, qk_cosines
    from .ridge import RidgeModel, ridge_path, ridge_path_from_moments
    from .routing_law import (
        advantages,
        compatibilities,
        feedback_change,
        first_order_ratio,
        key_gradient,
        query_gradient,
        relative_error,
        score_gradient,
        value_gradient,
    )
    from .selection_control import (
        CrossFit,
        MaxNull,
        cross_fit,
        head_posterior_scores,
        max_null,
        occurrence_weights,
        random_heads_max,
        shuffled_heads_max,
        split_halves,
    )
    from .splits import fold_assignments
    from .streaming_entropy_probe import StreamingEntropyProbe, held_out_sse
    from .streaming_moments import StreamingMoments, merge_all
    from .streaming_pca import StreamingPCA
    from .subspace_angles import principal_angles
    from .update_alignment import (
        centre_rows,
        head_cosine,
        head_scores,
        head_value_pca,
        path_length_fraction,
        real_keys,
        relative_change,
        row_tv_distance,
        settle_step,
    )
    from .validation_criteria import CriteriaResult, CriteriaThresholds, validation_criteria
    from .value_manifold import ValueManifoldSummary, ordering_score, value_manifold_summary

__all__ = [
    "POSITION_CONFOUND_R2", "AttentionEntropyProfile", "AxisProvenance", "Calibration",
    "ControlDraw", "CorrelationResult", "CriteriaResult", "CriteriaThresholds",
    "CriticalLength", "CrossFit", "DecayFit", "DomainManifold", "EffectNumber",
    "EffectiveNumber", "EnergyMoments", "EntropyAxis", "FrameScore", "Interval",
    "LayerOrthogonality", "ManifoldProjection", "MaxNull", "NullTest", "PCAResult",
    "PCASummary", "ProbeConfig", "ProbeResult", "QKAlignment", "RandomBaseline", "RidgeModel",
    "StreamingEntropyProbe", "StreamingMoments", "StreamingPCA", "TokenKeyOrthogonality",
    "ValueManifoldSummary", "acceleration", "advantages", "as_matrix", "as_vector",
    "attention_entropy_bits", "attention_entropy_profile", "attention_mass",
    "attention_posterior_tv", "average_ranks", "bca_interval", "bca_levels",
    "bootstrap_critical_length", "bootstrap_variance_ratios", "calibration",
    "calibration_by_group", "centre_rows", "compatibilities", "consistency_score",
    "content_masks", "correlation_with_ci", "coverage", "cross_fit", "decay_curve",
    "defined_prompts", "dimension_at_variance", "effect_effective_number", "effective_number",
    "effective_rank", "energy_matched_controls", "entropy_bits_from_logits",
    "entropy_bits_from_logprobs", "entropy_bits_from_probs", "entropy_probe",
    "entropy_probe_table", "exact_abs_cos_expectation", "excludes", "explained_variance_ratio",
    "feedback_change", "first_order_ratio", "fit_decay", "fit_domain_manifold",
    "fit_domain_manifolds", "fit_entropy_axis", "fit_pca", "focusing_fraction",
    "fold_assignments", "frame_orthogonality", "gaussian_abs_cos_baseline", "head_cosine",
    "head_entropies", "head_key_orthogonality", "head_posterior_scores", "head_scores",
    "head_value_pca", "held_out_sse", "holm", "holm_reach", "hypothesis_mass",
    "independent_energy_controls", "independent_reference", "isotropy", "jackknife_indices",
    "js_divergence_bits", "key_gradient", "kl_bits", "kl_bits_from_logprobs",
    "label_silhouette", "layer_key_orthogonality", "linear_cka", "make_rng",
    "manifold_angle_table", "max_null", "mean_abs_cos", "mean_interval", "merge_all",
    "normality_p", "null_test", "occurrence_weights", "ordering_score", "orient_components",
    "output_deviation", "parametric_p", "partial_spearman", "participation_ratio",
    "path_length_fraction", "pca_from_covariance", "pearson", "percentile_interval",
    "permuted_within_groups", "plateau_step", "position_design", "position_only_r2",
    "position_residual", "predictive_p", "principal_angles", "project_onto_manifold",
    "prompt_set_hash", "qk_alignment", "qk_alignment_profile", "qk_cosines", "query_gradient",
    "r2_score", "random_abs_cos", "random_heads_max", "random_init_baseline", "random_isotropy",
    "real_keys", "relative_change", "relative_error", "resample_indices", "ridge_path",
    "ridge_path_from_moments", "row_tv_distance", "score_frame", "score_gradient",
    "select_alpha", "settle_step", "shuffled_heads_max", "spearman", "split_halves",
    "split_key_weight", "standardization_scale", "summarize_pca", "token_key_orthogonality",
    "tracking_correlation", "tvd", "undefined_reason", "uniform_attention_tv", "unit",
    "validation_criteria", "value_gradient", "value_manifold_summary",
    "variance_ratios_of_rows", "welch_bound",
]

#: every public name is imported on first use (records.lazy): importing a light submodule
#: (a config, a list of names) imports no torch
__getattr__ = lazy_exports(__name__)
