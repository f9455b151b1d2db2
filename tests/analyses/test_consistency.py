"""``bayesgeom verify``: a model that outputs the exact posterior scores 1; controls beside it."""

from __future__ import annotations

import json

import numpy as np
import pytest
import torch

from bayesgeom.analyses.cli import main
from bayesgeom.analyses.kit.models import open_model
from bayesgeom.analyses.verify.run import ConsistencyConfig, prompts_for, run_consistency
from bayesgeom.records import read_table


def test_a_model_outputting_the_exact_posterior_is_fully_consistent(windtunnel_run, tmp_path):
    m = open_model(str(windtunnel_run))
    cfg = ConsistencyConfig(model=str(windtunnel_run), out=tmp_path / "v", n_prompts=24,
                            n_null=20, progress=False)
    pp = prompts_for(m, cfg)
    logp = torch.as_tensor(np.log(np.clip(pp.bayes, 1e-300, None)))
    hyp = torch.as_tensor(pp.hyp_ids)

    def exact(x: torch.Tensor) -> torch.Tensor:  # logits [B, T', V] -> the exact posterior
        rows = m.current_batch.prompt_index
        y = x.clone()
        y[:, -1] = -1e4
        y[torch.arange(len(rows))[:, None], -1, hyp[rows]] = logp[rows].to(y.dtype)
        return y

    with m.hooks([("logits", exact)]):
        res = run_consistency(cfg, model=m)
    scores = {o.source: o for o in res.outputs}
    assert abs(scores["model"].consistency - 1.0) < 1e-6 and scores["model"].mean_kl_bits < 1e-6
    assert scores["random_init"].consistency < 0.9
    assert scores["group_mean_baseline"].consistency < 1.0
    heads = read_table(tmp_path / "v" / "heads.parquet")
    assert len(heads) == 2 * 2  # layers x heads of the tiny preset
    for f in ("groups.parquet", "summary.json", "manifest.json", "report.html"):
        assert (tmp_path / "v" / f).is_file()


@pytest.mark.parametrize("flags, msg", [
    (["--sula-seed", "7"], "--sula-seed applies to text models (SULA prompts)"),
    (["--n-per-k", "3", "--sula-seed", "7"], "--n-per-k, --sula-seed apply to text models"),
])
def test_sula_options_on_a_wind_tunnel_are_refused_not_ignored(windtunnel_run, tmp_path, capsys,
                                                                flags, msg):
    out = tmp_path / "c"
    assert main(["verify", "--model", str(windtunnel_run), "--out", str(out), *flags]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and msg in err[0] and "is a wind tunnel" in err[0], err
    assert not out.exists()


def test_cli_json_on_a_wind_tunnel(windtunnel_run, tmp_path, capsys):
    code = main(["verify", "--model", str(windtunnel_run), "--out", str(tmp_path / "c"),
                 "--n-prompts", "16", "--n-null", "10", "--json", "--no-progress"])
    assert code == 0
    out = json.loads(capsys.readouterr().out)
    assert out["task"] == "bijection" and out["n_hypotheses"] == 6
    assert [o["source"] for o in out["outputs"]] == ["model", "random_init",
                                                     "group_mean_baseline"]
