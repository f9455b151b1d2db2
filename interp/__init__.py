"""interp: load, hook, capture and intervene on any Hugging Face causal LM, large or small.

    import interp
    model = interp.load()                       # embedded SmolLM2-135M, offline
    store = interp.capture(model, ["The capital of France is"], ["resid_post.*", "attn.-1.v"])
    store["attn.29.v"].shape                    # [1, 3, 64]: last token, 3 kv heads of 64
    with interp.intervene(model, interp.ProjectOut("attn.-1.v", axis, positions="last")):
        model.logits(["The capital of France is"])

Site names are listed in :mod:`interp.sites`; everything raises :class:`InterpError` subclasses
(usage errors, exit status 2; the faults among them -- :class:`NonFiniteActivationError`,
:class:`StoreError` -- exit 1) or :class:`records.FileFault` (a damaged or unwritable file) with
one-line, actionable messages. ``load`` reads safetensors only unless ``allow_pickle=True``;
:func:`check_device` checks a device string against this machine.
"""

from typing import TYPE_CHECKING

from ..records.lazy import lazy_exports

if TYPE_CHECKING:
    from .ablations import (
        Ablation,
        AblationHandle,
        BypassLayer,
        ZeroHead,
        ZeroSublayer,
        ablate,
        cumulative_bypass,
    )
    from .activation_patching import activation_patch, patch_roles
    from .activation_store import ActivationStore
    from .attribution_patching import attribution_patch
    from .capture import capture
    from .devices import available_devices, check_device
    from .directions import (
        VarianceMatchWarning,
        projection_std,
        random_controls,
        variance_matched_controls,
        variance_ratios,
    )
    from .embedded_model import EMBEDDED_NAME
    from .errors import (
        DirectionShapeError,
        InterpError,
        ModelNotAvailableError,
        ModelNotLoadedError,
        NilInterventionError,
        NilInterventionWarning,
        NonFiniteActivationError,
        PickleWeightsError,
        PositionError,
        PromptError,
        SiteNotLocatedError,
        StoreError,
        StoreMismatchError,
        UnknownSiteError,
        UnsupportedArchitectureError,
    )
    from .families import FAMILIES, AttentionGeometry
    from .init_twin import random_init_twin
    from .interventions import (
        AddVector,
        DirectionEdit,
        Intervention,
        InterventionHandle,
        KeepOnly,
        ProjectOut,
        ShiftAlong,
        intervene,
    )
    from .lens import LogitLens, Translator, fit_translator, logit_lens
    from .loading import load
    from .model import InterpModel
    from .patch_cells import ModelShape, PatchCell, cell_grid, check_cells, check_pairs
    from .patch_inputs import read_logits
    from .patch_result import PatchResult
    from .patch_scores import (
        PairScore,
        combine_scores,
        kl_score,
        logit_diff_score,
        posterior_kl_score,
    )
    from .path_patching import path_patch
    from .sites import SITE_KINDS, Site, resolve_layer, resolve_layers, site_name
    from .unembed import unembed
    from .weights import projection_weights

__all__ = [
    "EMBEDDED_NAME",
    "FAMILIES",
    "SITE_KINDS",
    "Ablation",
    "AblationHandle",
    "ActivationStore",
    "AddVector",
    "AttentionGeometry",
    "BypassLayer",
    "DirectionEdit",
    "DirectionShapeError",
    "InterpError",
    "InterpModel",
    "Intervention",
    "InterventionHandle",
    "KeepOnly",
    "LogitLens",
    "ModelNotAvailableError",
    "ModelNotLoadedError",
    "ModelShape",
    "NilInterventionError",
    "NilInterventionWarning",
    "NonFiniteActivationError",
    "PairScore",
    "PatchCell",
    "PatchResult",
    "PickleWeightsError",
    "PositionError",
    "ProjectOut",
    "PromptError",
    "ShiftAlong",
    "Site",
    "SiteNotLocatedError",
    "StoreError",
    "StoreMismatchError",
    "Translator",
    "UnknownSiteError",
    "UnsupportedArchitectureError",
    "VarianceMatchWarning",
    "ZeroHead",
    "ZeroSublayer",
    "ablate",
    "activation_patch",
    "attribution_patch",
    "available_devices",
    "capture",
    "cell_grid",
    "check_cells",
    "check_device",
    "check_pairs",
    "combine_scores",
    "cumulative_bypass",
    "fit_translator",
    "intervene",
    "kl_score",
    "load",
    "logit_diff_score",
    "logit_lens",
    "patch_roles",
    "path_patch",
    "posterior_kl_score",
    "projection_std",
    "projection_weights",
    "random_controls",
    "random_init_twin",
    "read_logits",
    "resolve_layer",
    "resolve_layers",
    "site_name",
    "unembed",
    "variance_matched_controls",
    "variance_ratios",
]

#: every public name is imported on first use (records.lazy): importing a light submodule
#: (a config, a list of names) imports no torch
__getattr__ = lazy_exports(__name__)
