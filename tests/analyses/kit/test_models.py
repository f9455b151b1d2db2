"""open_model: the one place where a wind-tunnel run becomes an InterpModel with its task."""

from __future__ import annotations

import pytest
import torch

from bayesgeom import interp
from bayesgeom.analyses.kit.models import open_model
from bayesgeom.records import FileFault, exit_code


def test_windtunnel_run_model_dir_and_checkpoint_open_the_same_way(tmp_path):
    from bayesgeom.windtunnel import make_task
    from bayesgeom.windtunnel.training import TrainConfig, train

    wt_prompts = make_task("bijection", V=6).sample(4, 0).input_ids
    cfg = TrainConfig(task="bijection", task_params={"V": 6}, preset="tiny", steps=4,
                      batch_size=8, eval_every=4, eval_size=16, final_eval_size=16,
                      ckpt_every=2, warmup_steps=1)
    run = train(cfg, tmp_path / "run", progress=False).out
    ckpt = next((run / "checkpoints").glob("step-*"))
    stores = []
    for path in (run, run / "model", ckpt):
        m = open_model(path)
        assert m.info.source == "windtunnel" and m.info.family == "gpt2"
        assert m.task is not None and m.task.config()["V"] == 6 and m.tokenizer is None
        stores.append(interp.capture(m, wt_prompts, ["resid_post.-1", "attn.-1.v"],
                                     progress=False))
    torch.testing.assert_close(stores[0]["attn.1.v"], stores[1]["attn.1.v"], atol=0, rtol=0)
    torch.testing.assert_close(stores[0]["attn.1.v"], stores[2]["attn.1.v"], atol=0, rtol=0)
    assert stores[0]["attn.1.v"].shape == (4, 2, 16)


def test_text_models_and_loaded_models_pass_through(text_models):
    m = open_model(text_models["llama"])
    assert m.info.source == "local" and m.task is None
    assert open_model(m) is m


def test_a_broken_run_is_one_clear_error(tmp_path):
    (tmp_path / "run.json").write_text("{not json")
    with pytest.raises(FileFault, match=r"run.json is not valid JSON \(line 1\)") as e:
        open_model(tmp_path)
    assert exit_code(e.value) == 1  # a damaged file is a fault, not a usage error
