"""The registered probes of a geometry run: every metric reaches the table, the report and
compare with no per-probe code there, and each number matches an independent recomputation."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest
import scipy.linalg
import torch

from bayesgeom import interp
from bayesgeom.analyses.compare import run as compare
from bayesgeom.analyses.geometry.probes import MEASURES, catalogue
from bayesgeom.analyses.geometry.run import GeometryConfig, run_geometry
from bayesgeom.analyses.kit.models import open_model
from bayesgeom.probes import fit_pca, value_manifold_summary


def _rows(result, metric, prompt_set=None, target=None, reference="model"):
    return {r.layer: r.value for r in result.metrics if r.metric == metric
            and r.prompt_set == prompt_set and r.target == target and r.reference == reference}


@pytest.fixture(scope="module")
def llama_probe_run(text_models, tmp_path_factory):
    from bayesgeom.analyses.prompts import corpora

    mp = pytest.MonkeyPatch()
    mp.setattr(corpora, "package_dir", lambda m: None)
    out = tmp_path_factory.mktemp("probes") / "llama"
    try:
        r = run_geometry(GeometryConfig(
            model=str(text_models["llama"]), out=out, prompts=("mixed", "code", "legal"),
            n_per_quintile=3, pool_size=120, n_resamples=30, progress=False,
            corpus_paths=corpora.CorpusPaths(r_libraries=())))
    finally:
        mp.undo()
    return r, out


@pytest.fixture(scope="module")
def wt_probe_run(windtunnel_run, tmp_path_factory):
    out = tmp_path_factory.mktemp("probes") / "wt"
    return run_geometry(GeometryConfig(model=str(windtunnel_run), out=out, n_per_quintile=3,
                                       pool_size=60, n_resamples=30, progress=False)), out


def test_every_probe_reaches_the_table_the_report_and_compare(llama_probe_run, wt_probe_run):
    for result, out in (llama_probe_run, wt_probe_run):
        table = pd.read_parquet(out / "table.parquet")
        html = (out / "report.html").read_text()
        compared = compare.metric_values(result)
        model = open_model(result.model)
        for m in MEASURES:
            if not m.applies(model) or (m.scope == "sets" and len(result.prompt_sets) < 2):
                assert not set(table["metric"]) & {s.name for s in m.specs}, m.name
                continue
            for spec in m.specs:
                assert spec.name in set(table["metric"]), (m.name, spec.name)
                assert spec.label in html, spec.label
                if spec.compare:
                    assert any(k.split(".", 1)[1].split("[")[0] == spec.name for k in compared)
    assert set(catalogue()) >= {s.name for m in MEASURES for s in m.specs}


def test_value_manifold_matches_probes_on_the_captured_outputs(llama_probe_run, text_models):
    result, out = llama_probe_run
    legal = pd.read_parquet(out / "prompts.parquet").query("prompt_set == 'legal'")
    m = interp.load(text_models["llama"])
    store = interp.capture(m, list(legal["text"]), ["attn_out.1"], progress=False)
    h = store.entropy_bits.double().numpy()
    ref = value_manifold_summary(store["attn_out.1"].double().numpy(), h, seed=0)
    assert _rows(result, "vm_pc1", "legal")[1] == pytest.approx(ref.pc1, rel=1e-5)
    assert _rows(result, "vm_linear_r2", "legal", "entropy")[1] == pytest.approx(
        ref.linear_r2, rel=1e-4, abs=1e-6)


def test_qk_alignment_matches_a_direct_computation(llama_probe_run, text_models):
    result, out = llama_probe_run
    legal = pd.read_parquet(out / "prompts.parquet").query("prompt_set == 'legal'")
    m = interp.load(text_models["llama"])
    group = m.geometry.n_heads // m.geometry.n_kv_heads
    max_cos, ent = [], []
    for text in legal["text"]:
        s = interp.capture(m, [text], ["attn.1.q", "attn.1.k"], "all", progress=False)
        q = s["attn.1.q"][-1].double()  # [H, dh] at the final token
        k = s["attn.1.k"].double().repeat_interleave(group, dim=1)  # [T, H, dh]
        cos = torch.einsum("hd,thd->ht", q / q.norm(dim=-1, keepdim=True),
                           k / k.norm(dim=-1, keepdim=True))
        max_cos.append(float(cos.max(-1).values.mean()))
        p = torch.softmax(torch.einsum("hd,thd->ht", q, k) / q.shape[-1] ** 0.5, -1)
        ent.append(float(-(p * p.log2()).sum(-1).mean()))
    assert _rows(result, "qk_max_cos", "legal")[1] == pytest.approx(np.mean(max_cos), rel=1e-5)
    assert _rows(result, "qk_softmax_entropy_bits", "legal")[1] == pytest.approx(np.mean(ent),
                                                                                rel=1e-5)
    assert _rows(result, "qk_softmax_entropy_bits", "legal")[1] <= _rows(
        result, "qk_uniform_entropy_bits", "legal")[1] + 1e-9


def _layer0_abs_cos(m, ids) -> float:
    emb = m.hf.get_input_embeddings().weight.detach()[ids]
    attn = m.hf.transformer.h[0].attn
    with torch.no_grad():
        keys = attn.c_attn(emb.unsqueeze(0))[0][:, m.d_model: 2 * m.d_model].double()  # [V, H·dh]
    keys = keys.view(len(emb), m.geometry.n_heads, -1).transpose(0, 1)  # [H, V, dh]
    u = keys / keys.norm(dim=-1, keepdim=True)
    c = u @ u.transpose(1, 2)
    off = ~torch.eye(len(emb), dtype=torch.bool)
    return float(c[:, off].abs().mean())


def test_token_key_orthogonality_uses_the_task_tokens(wt_probe_run, windtunnel_run):
    result, _ = wt_probe_run
    m = open_model(windtunnel_run)
    want = _layer0_abs_cos(m, m.task.hyp_slice)  # the value (hypothesis-slice) tokens V..2V−1
    assert _rows(result, "token_key_abs_cos")[0] == pytest.approx(want, rel=1e-6)
    gauss = _rows(result, "token_key_gaussian")[0]
    assert gauss == pytest.approx(np.sqrt(2 / (np.pi * m.geometry.d_head)))


def test_paper_i_token_keys_are_e_tok_0_to_v_at_layer_0_and_labelled_so(wt_probe_run,
                                                                         windtunnel_run):
    result, _ = wt_probe_run
    m = open_model(windtunnel_run)
    V = m.task.n_hypotheses
    got = _rows(result, "paper1_key_abs_cos")
    assert list(got) == [0] and got[0] == pytest.approx(_layer0_abs_cos(m, list(range(V))),
                                                       rel=1e-6)
    assert got[0] != pytest.approx(_rows(result, "token_key_abs_cos")[0], rel=1e-3)
    cat = catalogue()
    assert "Paper I" in cat["paper1_key_abs_cos"].label and "layer 0" in cat[
        "paper1_key_abs_cos"].label
    # the row compare reads at the Table-1 (last) layer is not called Paper I's
    label = cat["token_key_abs_cos"].label
    assert "Table-1 layer" in label and label.count("Paper I") == label.count("not Paper I")
    assert not cat["token_key_abs_cos"].definition.startswith("Paper I")
    names = {r.metric for r in compare.measure_rows(result)}
    assert {"paper1_key_abs_cos", "token_key_abs_cos"} <= names


def test_domain_manifolds_and_cka(llama_probe_run):
    result, _ = llama_probe_run
    pairs = {r.target for r in result.metrics if r.metric == "manifold_mean_angle_deg"}
    assert pairs == {"mixed|code", "mixed|legal", "code|legal"}
    for pair in pairs:
        lo = _rows(result, "manifold_min_angle_deg", target=pair)[1]
        mean = _rows(result, "manifold_mean_angle_deg", target=pair)[1]
        assert 0 <= lo <= mean <= 90
    cka = _rows(result, "cka_to_table_layer", "legal")
    assert cka[1] == pytest.approx(1.0) and 0 <= cka[0] <= 1  # the table layer with itself


def test_principal_angles_agree_with_scipy(llama_probe_run, text_models):
    """The code|legal angle against scipy's subspace_angles on independently fitted PCAs."""
    result, out = llama_probe_run
    prompts = pd.read_parquet(out / "prompts.parquet")
    m = interp.load(text_models["llama"])
    bases = []
    for name in ("code", "legal"):
        texts = list(prompts[prompts["prompt_set"] == name]["text"])
        v = interp.capture(m, texts, ["attn.1.v"], progress=False)["attn.1.v"]
        pca = fit_pca(v.flatten(1).double().numpy())
        k = pca.dimension_at_variance(0.9)
        bases.append(pca.components[:k].T)
    ang = np.degrees(scipy.linalg.subspace_angles(*bases))
    assert _rows(result, "manifold_mean_angle_deg", target="code|legal")[1] == pytest.approx(
        ang.mean(), abs=1e-4)
