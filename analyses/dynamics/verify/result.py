"""The typed result of ``bayesgeom dynamics verify`` (:mod:`analyses.dynamics.verify.run`) and the
identities it checks."""

from __future__ import annotations

from dataclasses import dataclass, field

#: identity -> (formula, what a row is per, spec §2.2 item)
IDENTITIES: dict[str, tuple[str, str, str]] = {
    "attention_weight_grad": ("∂L/∂α_ij = b_ij = u_iᵀv_j", "query head", "1"),
    "routing_law": ("∂L/∂s_ij = α_ij (b_ij − E_α_i[b])", "query head", "1"),
    "score_rows_sum_zero": ("Σ_j ∂L/∂s_ij = 0 (max |row sum| / max |∂L/∂s|)", "query head",
                            "2"),
    "value_grad": ("∂L/∂v_j = Σ_i α_ij u_i", "kv head", "3"),
    "query_grad": ("∂L/∂q_i = c Σ_j ∂L/∂s_ij k_j", "query head", "4"),
    "key_grad": ("∂L/∂k_j = c Σ_i ∂L/∂s_ij q_i", "kv head", "4"),
    "feedback": ("Δb_ij = −η u_iᵀ Σ_i' α_i'j u_i' after a value step", "query head", "6"),
    "masked_entries": ("α = 0 and ∂L/∂s = 0 on masked entries (absolute)", "query head",
                       "7"),
}
#: identity -> the identity it follows from: spec item 6 (the feedback Δb) is u_iᵀ times
#: identity 3's value gradient at fixed u, so it holds whenever identity 3 does and is no
#: independent check; it is reported, labelled, and left out of the independent passes
COROLLARIES: dict[str, str] = {"feedback": "value_grad"}
CONTROLS: dict[str, tuple[str, str, str]] = {
    "routing_law_without_baseline": ("∂L/∂s_ij ≈ α_ij b_ij (no E_α[b])", "query head", "1"),
    "value_grad_without_responsibilities": ("∂L/∂v_j ≈ Σ_i u_i", "kv head", "3"),
}

@dataclass
class IdentityCheck:
    """The largest error of one identity over the checked heads and layers, and where."""

    identity: str
    formula: str
    per: str
    spec_item: str
    control: bool
    max_error: float
    worst_layer: int
    worst_head: int
    passed: bool | None
    #: the identity this one follows from (None: an independent identity or a control)
    corollary_of: str | None = None


@dataclass
class DynamicsVerifyResult:
    """What ``summary.json`` holds; errors are relative (module doc) except masked entries."""

    model: str
    family: str
    dtype: str
    loss_kind: str
    loss: float
    n_prompts: int
    n_tokens: int
    layers: list[int]
    n_heads: int
    n_kv_heads: int
    tolerance: float
    checks: list[IdentityCheck]
    #: ε -> the largest |1 − ratio| over layers (identity 5)
    value_step: dict[str, float] = field(default_factory=dict)
    #: every independent identity passes (corollaries and controls not counted)
    all_passed: bool = False
    #: independent identities passed / checked (corollaries and controls not counted)
    independent_passed: int = 0
    independent_checked: int = 0
    wall_s: float = 0.0
