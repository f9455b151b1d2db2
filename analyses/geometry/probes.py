"""The further probes of a geometry run, each a :class:`~analyses.geometry.measures.Measure`
registered in :data:`MEASURES`; and :func:`catalogue`, every metric a run can write.

A new probe is one function returning :class:`~analyses.geometry.result.MetricRow` s and one
``Measure`` entry here; the pipeline captures what it declares, and its rows reach
``table.parquet``, ``summary.json``, the report (curves, table) and ``compare`` with no other
edit.
"""

from __future__ import annotations

import numpy as np

from ... import interp
from ...probes import (
    fit_domain_manifolds,
    linear_cka,
    principal_angles,
    project_onto_manifold,
    qk_alignment,
    token_key_orthogonality,
    value_manifold_summary,
)
from ...windtunnel.bijection import paper1_token_ids
from .measures import CORE_SPECS, Measure, MetricSpec, SetData
from .result import MetricRow

PAPER_I_VM = ("Paper I value manifold: centred PCA (no standardisation) of the attention output "
              "attn_out.L at each prompt's final token -- for a wind tunnel a supervised "
              "position, one per sequence; linear R² from an 80/20 split")


def value_manifold_rows(d: SetData) -> list[MetricRow]:
    """Paper I's value-manifold summary per layer: PC1 and PC2 shares, 90 and 95 % dimensions,
    and per target the linear R² (80/20 split), the same R² with the target shuffled (the
    control), the ordering score and max |corr(PC_k, H)| over k ≤ 5. (The random-init twin's
    run of this measure is its other control.)"""
    rows = []
    for L in d.layers:
        x = d.last[f"attn_out.{L}"].double().numpy()
        for i, (t, h) in enumerate(d.targets.items()):
            s = value_manifold_summary(x, h, seed=d.seed)
            shuffled = np.random.default_rng([d.seed, L]).permutation(h)
            ctrl = value_manifold_summary(x, shuffled, seed=d.seed).linear_r2
            if i == 0:
                rows += [MetricRow(d.name, L, "vm_pc1", None, s.pc1),
                         MetricRow(d.name, L, "vm_pc2", None, s.pc2),
                         MetricRow(d.name, L, "vm_dim90", None, float(s.dim90)),
                         MetricRow(d.name, L, "vm_dim95", None, float(s.dim95))]
            rows += [MetricRow(d.name, L, "vm_linear_r2", t, s.linear_r2),
                     MetricRow(d.name, L, "vm_linear_r2_shuffled", t, ctrl),
                     MetricRow(d.name, L, "vm_ordering", t, s.ordering_score),
                     MetricRow(d.name, L, "vm_max_abs_corr", t,
                               float(np.nanmax(np.abs(s.corr_pc_entropy))))]
    return rows


QK_DEF = ("Paper I: cos(q_T, k_j) of the final token's query with every earlier key, pre-RoPE "
          "projections (for RoPE models the rotation is not applied); entropy of softmax(q·k/√d)")


def _keys_by_prompt(d: SetData, layer: int, n_q_heads: int) -> tuple[np.ndarray, np.ndarray]:
    """Every token's key of each prompt, zero-padded: ([n, H, T, dh] with kv heads repeated
    for the query heads they serve, as HF's repeat_kv), and the valid-key mask [n, T]."""
    k = d.every[f"attn.{layer}.k"].double().numpy()  # [rows, Hkv, dh], prompt-major
    idx, pos = d.every.prompt_index.numpy(), d.every.position.numpy()
    n, t = int(idx.max()) + 1, int(pos.max()) + 1
    keys = np.zeros((n, k.shape[1], t, k.shape[2]))
    keys[idx, :, pos] = k
    mask = np.zeros((n, t), dtype=bool)
    mask[idx, pos] = True
    return np.repeat(keys, n_q_heads // k.shape[1], axis=1), mask


def qk_alignment_rows(d: SetData) -> list[MetricRow]:
    """Per layer: mean max and mean cos(q_T, k_j) over heads and prompts, the entropy (bits) of
    softmax(q·k/√d) over the valid keys, and uniform attention's entropy (the control)."""
    rows = []
    for L in d.layers:
        q = d.last[f"attn.{L}.q"].double().numpy()  # [n, H, dh]
        keys, mask = _keys_by_prompt(d, L, q.shape[1])
        a = qk_alignment(q, keys, mask, layer=L)
        rows += [MetricRow(d.name, L, "qk_max_cos", None, a.mean_max_cos),
                 MetricRow(d.name, L, "qk_mean_cos", None, a.mean_cos),
                 MetricRow(d.name, L, "qk_softmax_entropy_bits", None, a.softmax_entropy_bits),
                 MetricRow(d.name, L, "qk_uniform_entropy_bits", None,
                           float(np.log2(mask.sum(1)).mean()))]
    return rows


TOKEN_KEY_DEF = ("per layer: the keys of the task's hypothesis tokens (their input embeddings "
                 "E_tok[hyp] through that layer's W_K (+ b)) per head, mean |cos| over token "
                 "pairs, mean over heads; compare reads it at the Table-1 layer; Gaussian "
                 "control √(2/(π·d_k)). Not Paper I's statistic (layer 0, E_tok[0..V−1])")
PAPER_I_KEY_DEF = ("Paper I's token-key orthogonality (spec §1.9, qkv_analysis.py "
                   "orthogonality; |cos| as in Paper I v3): K = E_tok[0..V−1]·W_K (+ b) of "
                   "layer 0 -- the raw embeddings of tokens 0..V−1, the bijection's V key "
                   "tokens -- per head, mean |off-diagonal cos|, mean over heads; bijection "
                   "only; Gaussian control √(2/(π·d_k))")


def token_key_rows(model: interp.InterpModel, layers: list[int]) -> list[MetricRow]:
    """Per layer: mean |cos| and mean signed cos between the keys of the task's hypothesis
    tokens (their raw input embeddings through each head's W_K and bias), and the Gaussian
    chance level at the head size; on the bijection also Paper I's layer-0 statistic on
    E_tok[0..V−1] (rows with ``layer`` 0, not per layer)."""
    table = model.hf.get_input_embeddings().weight.detach()
    emb = table[model.task.hyp_slice].double().numpy()
    rows = []
    for L in layers:
        w, b = interp.projection_weights(model, f"attn.{L}.k")
        o = token_key_orthogonality(emb, w.numpy(), b.numpy())
        rows += [MetricRow(None, L, "token_key_abs_cos", None, o.mean_abs_cos),
                 MetricRow(None, L, "token_key_signed_cos", None, o.mean_signed_cos),
                 MetricRow(None, L, "token_key_gaussian", None, o.gaussian_formula)]
    ids = paper1_token_ids(model.task)
    if ids is not None:
        w, b = interp.projection_weights(model, "attn.0.k")
        o = token_key_orthogonality(table[ids].double().numpy(), w.numpy(), b.numpy())
        rows += [MetricRow(None, 0, "paper1_key_abs_cos", None, o.mean_abs_cos),
                 MetricRow(None, 0, "paper1_key_signed_cos", None, o.mean_signed_cos),
                 MetricRow(None, 0, "paper1_key_gaussian", None, o.gaussian_formula)]
    return rows


MANIFOLD_DEF = ("domain manifolds: centred PCA subspace (90 % of the variance) of each prompt "
                "set's final-token values at the Table-1 layer; principal angles between two "
                "sets' subspaces, against random subspaces of the same dimensions")
CKA_DEF = ("linear CKA (Kornblith et al.) between final-token values at each layer and at the "
           "Table-1 layer, on the same prompts; control: random Gaussian features of that shape")


def _random_angle(d: int, ka: int, kb: int, seed: int, draws: int = 20) -> float:
    """Mean principal angle (degrees) between random subspaces of dimensions ka and kb in R^d."""
    rng = np.random.default_rng([seed, d, ka, kb])
    return float(np.mean([principal_angles(rng.standard_normal((ka, d)),
                                           rng.standard_normal((kb, d))).mean()
                          for _ in range(draws)]))


def domain_manifold_rows(sets: dict[str, SetData]) -> list[MetricRow]:
    """For every pair of prompt sets (``target`` "a|b"): the min and mean principal angle between
    their value subspaces, the same for random subspaces (the control), and the fraction of b's
    centred variance outside a's subspace."""
    if len(sets) < 2:
        return []
    first = next(iter(sets.values()))
    layer, seed = first.table_layer, first.seed
    values = {n: s.values(layer) for n, s in sets.items()}
    manifolds = fit_domain_manifolds(values, variance=0.9, standardize=False)
    rows = []
    names = list(sets)
    for i, a in enumerate(names):
        for b in names[i + 1:]:
            ma, mb = manifolds[a], manifolds[b]
            ang = principal_angles(ma.pca.components, mb.pca.components)
            pair = f"{a}|{b}"
            rows += [
                MetricRow(None, layer, "manifold_min_angle_deg", pair, float(ang.min())),
                MetricRow(None, layer, "manifold_mean_angle_deg", pair, float(ang.mean())),
                MetricRow(None, layer, "manifold_random_mean_angle_deg", pair,
                          _random_angle(values[a].shape[1], ma.k, mb.k, seed)),
                MetricRow(None, layer, "manifold_residual_fraction", pair,
                          project_onto_manifold(ma, values[b]).total_residual_fraction)]
    return rows


def cka_rows(d: SetData) -> list[MetricRow]:
    """Per layer: linear CKA with the Table-1 layer's values, and with random features."""
    ref = d.values(d.table_layer)
    rows = []
    for L in d.layers:
        x = d.values(L)
        noise = np.random.default_rng([d.seed, L]).standard_normal(x.shape)
        rows += [MetricRow(d.name, L, "cka_to_table_layer", None, linear_cka(x, ref)),
                 MetricRow(d.name, L, "cka_random_control", None, linear_cka(noise, ref))]
    return rows


#: pluggable measures, in the order they run
MEASURES: tuple[Measure, ...] = (
    Measure("value_manifold", "set", (
        MetricSpec("vm_pc1", "attention-output PC1 share", PAPER_I_VM, compare=True),
        MetricSpec("vm_pc2", "attention-output PC2 share", PAPER_I_VM, curve=False),
        MetricSpec("vm_dim90", "attention-output 90 % dimension", PAPER_I_VM),
        MetricSpec("vm_dim95", "attention-output 95 % dimension", PAPER_I_VM, curve=False),
        MetricSpec("vm_linear_r2", "linear R² of entropy from attn_out", PAPER_I_VM,
                   compare=True),
        MetricSpec("vm_linear_r2_shuffled", "linear R² with entropy shuffled (control)",
                   PAPER_I_VM, compare=True, control=True),
        MetricSpec("vm_ordering", "ordering score of PC1 along entropy", PAPER_I_VM),
        MetricSpec("vm_max_abs_corr", "max |corr(PC_k, entropy)|, k ≤ 5", PAPER_I_VM)),
        value_manifold_rows, last_sites=lambda layers: [f"attn_out.{L}" for L in layers]),
    Measure("qk_alignment", "set", (
        MetricSpec("qk_max_cos", "query–key alignment: max cos", QK_DEF),
        MetricSpec("qk_mean_cos", "query–key alignment: mean cos", QK_DEF),
        MetricSpec("qk_softmax_entropy_bits", "entropy of softmax(q·k/√d) (bits)", QK_DEF,
                   compare=True),
        MetricSpec("qk_uniform_entropy_bits", "uniform attention's entropy (bits, control)",
                   QK_DEF, compare=True, control=True)),
        qk_alignment_rows, last_sites=lambda layers: [f"attn.{L}.q" for L in layers],
        every_sites=lambda layers: [f"attn.{L}.k" for L in layers]),
    Measure("token_key_orthogonality", "model", (
        MetricSpec("token_key_abs_cos", "hypothesis-token key |cos| at the Table-1 layer "
                   "(E_tok[hyp]·W_K; not Paper I's layer 0)", TOKEN_KEY_DEF, compare=True),
        MetricSpec("token_key_signed_cos", "hypothesis-token keys: mean signed cos",
                   TOKEN_KEY_DEF, curve=False),
        MetricSpec("token_key_gaussian", "Gaussian |cos| at d_k (control)", TOKEN_KEY_DEF,
                   compare=True, control=True),
        MetricSpec("paper1_key_abs_cos", "Paper I token-key |cos| (layer 0, E_tok[0..V−1]·W_K)",
                   PAPER_I_KEY_DEF, per_layer=False, compare=True, curve=False),
        MetricSpec("paper1_key_signed_cos", "Paper I token keys: mean signed cos (layer 0)",
                   PAPER_I_KEY_DEF, per_layer=False, curve=False),
        MetricSpec("paper1_key_gaussian", "Gaussian |cos| at d_k (control of Paper I's)",
                   PAPER_I_KEY_DEF, per_layer=False, compare=True, curve=False, control=True)),
        token_key_rows, applies=lambda model: getattr(model.task, "hyp_slice", None) is not None),
    Measure("domain_manifolds", "sets", (
        MetricSpec("manifold_min_angle_deg", "smallest principal angle between prompt sets "
                   "(degrees)", MANIFOLD_DEF, compare=True, curve=False),
        MetricSpec("manifold_mean_angle_deg", "mean principal angle between prompt sets "
                   "(degrees)", MANIFOLD_DEF, compare=True, curve=False),
        MetricSpec("manifold_random_mean_angle_deg", "mean angle of random subspaces "
                   "(degrees, control)", MANIFOLD_DEF, compare=True, curve=False, control=True),
        MetricSpec("manifold_residual_fraction", "variance of the second set outside the "
                   "first's subspace", MANIFOLD_DEF, curve=False)),
        domain_manifold_rows),
    Measure("cka", "set", (
        MetricSpec("cka_to_table_layer", "linear CKA with the Table-1 layer", CKA_DEF),
        MetricSpec("cka_random_control", "linear CKA of random features (control)", CKA_DEF,
                   control=True)),
        cka_rows),
)


def catalogue() -> dict[str, MetricSpec]:
    """Every metric a geometry run can write, by name."""
    return {s.name: s for s in (*CORE_SPECS, *(s for m in MEASURES for s in m.specs))}
