"""Wind-tunnel geometry against its controls: the random-initialisation twin and position.

Tests that would have caught the reviewer's findings (issue 10): a model at random
initialisation must be indistinguishable from its control, a trained one must not be, and a
task whose exact entropy is a function of position must say so.
"""

from __future__ import annotations

from dataclasses import replace

import numpy as np
import pytest

from bayesgeom import interp
from bayesgeom.analyses.compare import run as compare
from bayesgeom.analyses.geometry import probes as geometry_probes
from bayesgeom.analyses.geometry.report import findings
from bayesgeom.analyses.geometry.run import GeometryConfig, run_geometry
from bayesgeom.analyses.kit.models import open_model
from bayesgeom.windtunnel import make_task
from bayesgeom.windtunnel.architectures import build_model
from bayesgeom.windtunnel.training import TrainConfig, train

SMALL = dict(n_per_quintile=8, pool_size=200, n_resamples=30, curve_resamples=20,
             progress=False)


def _values(result, reference):
    return {(r.prompt_set, r.layer, r.metric, r.target): r.value for r in result.metrics
            if r.reference == reference}


@pytest.fixture(scope="module")
def hmm_run(tmp_path_factory):
    """The tiny transformer trained briefly on HMM filtering (entropy varies at fixed t)."""
    out = tmp_path_factory.mktemp("controls") / "hmm"
    train(TrainConfig(task="hmm", arch="transformer", preset="tiny", steps=150, seed=0,
                      batch_size=32, eval_every=150, eval_size=64, final_eval_size=64,
                      ckpt_every=150, warmup_steps=20), out, progress=False)
    return out


def test_a_model_at_random_init_is_indistinguishable_from_its_control(tmp_path):
    task = make_task("hmm")
    model = interp.InterpModel(build_model(task, "transformer", "tiny", seed=0),
                               name="untrained", source="windtunnel", task=task)
    twin = interp.random_init_twin(model, seed=0)
    assert twin.weights_digest() == model.weights_digest()  # a seed's twin is its own init
    r = run_geometry(GeometryConfig(out=tmp_path / "g", **SMALL), model=model)
    mine, init = _values(r, "model"), _values(r, "random_init")
    controls = {n for n, spec in geometry_probes.catalogue().items() if spec.control}
    assert init.keys() == {k for k in mine if k[2] not in controls} and len(init) > 50
    for k, v in init.items():
        assert v == pytest.approx(mine[k], rel=1e-6, abs=1e-9, nan_ok=True), k
    assert r.key_orthogonality.init_mean_abs_cos == pytest.approx(
        r.key_orthogonality.mean_abs_cos)
    # an untrained tunnel gets no verdict (the learned-first gate) ...
    gated = findings(r)
    assert gated[0].survives is False and all(f.survives is None for f in gated[1:])
    # ... and behind the gate no claim survives a twin that is the model itself
    rows = findings(replace(r, learned=None))
    assert len(rows) >= 4 and all(f.survives is False for f in rows), rows


def test_a_trained_runs_twin_is_its_own_step_zero(hmm_run):
    trained = open_model(hmm_run)
    start = interp.InterpModel(build_model(trained.task, "transformer", "tiny", seed=0))
    assert interp.random_init_twin(trained, seed=0).weights_digest() == start.weights_digest()
    assert trained.weights_digest() != start.weights_digest()


def test_a_trained_wind_tunnel_separates_from_its_random_init(hmm_run, tmp_path):
    r = run_geometry(GeometryConfig(model=str(hmm_run), out=tmp_path / "g", **SMALL))
    head = {x.metric: x.value for x in compare.headline_rows(r)}
    assert head["pc1"] > head["pc1@random_init"] + 0.05
    assert head["key_orthogonality"] > head["key_orthogonality@random_init"] + 0.03
    assert head["abs_rho_pc1_bayes_entropy"] > head["abs_rho_pc1_bayes_entropy@random_init"]
    # HMM filtering: the exact entropy is not a function of position, and nothing says it is
    pc = r.headline.position_control("bayes_entropy")
    assert pc is not None and pc.probe_r2 < 0.5 and not r.notes
    # every core number has its random-init and (where defined) position twin in the table
    refs = {(x.metric, x.reference) for x in r.metrics}
    for metric in ("pc1", "abs_spearman_pc1", "probe_r2", "attention_entropy_bits",
                   "key_mean_abs_cos", "vm_pc1", "token_key_abs_cos"):
        assert (metric, "random_init") in refs, metric
    assert {("probe_r2", "position"), ("abs_spearman_pc1", "position")} <= refs
    # the verdicts: the keys are less orthogonal than at initialisation (mean |cos| up), so
    # that claim does not survive its twin
    rows = {f.claim.split(" (")[0]: f for f in findings(replace(r, learned=None))}
    key = rows["keys orthogonal"]
    assert key.survives is False and "random-init twin" in key.control
    assert "gap +" in key.evidence


def test_position_confound_of_bijection_without_replacement_is_stated(windtunnel_run, tmp_path):
    r = run_geometry(GeometryConfig(model=str(windtunnel_run), out=tmp_path / "g", **SMALL))
    pc = r.headline.position_control("bayes_entropy")
    assert pc is not None and pc.probe_r2 > 0.95
    assert any("position alone explains bayes entropy" in n for n in r.notes)
    table = r.headline
    # what is left of the exact entropy given position is (almost) nothing to correlate with
    assert not np.isfinite(pc.partial_abs_rho_pc1) or pc.partial_abs_rho_pc1 < 0.5
    assert table.rho_pc1_bayes_entropy is not None
    # so the claim that PC1 tracks the exact entropy does not survive the position control
    row = next(f for f in findings(replace(r, learned=None))
               if "PC1 tracks bayes entropy" in f.claim)
    assert row.survives is False and "position alone explains" in row.evidence
