"""The model facts a config is checked against before its model loads: its kind and layer count
from ``--model``, or from the model a run was handed already open (``run_detect(cfg, model=m)``,
whose ``cfg.model`` may say nothing about it)."""

from __future__ import annotations

from types import SimpleNamespace

import pytest

from bayesgeom.analyses.detect.config import DetectConfig
from bayesgeom.analyses.kit.errors import ExperimentError
from bayesgeom.analyses.kit.model_facts import check_with
from bayesgeom.analyses.steer.config import SteerConfig


def _open(windtunnel: bool, n_layers: int) -> SimpleNamespace:
    """What the checks read of an open model."""
    return SimpleNamespace(task=object() if windtunnel else None, n_layers=n_layers,
                           info=SimpleNamespace(name="m", source="windtunnel" if windtunnel
                                                else "hf"))


def test_an_open_model_decides_the_kind_not_the_default_name(tmp_path):
    cfg = DetectConfig(out=tmp_path / "d", n_sequences=8)  # model None: the default SmolLM2
    with pytest.raises(ExperimentError, match="applies to wind tunnels only"):
        check_with(cfg, None)
    check_with(cfg, _open(windtunnel=True, n_layers=2))  # handed a wind tunnel: read
    with pytest.raises(ExperimentError, match="--n-sequences applies to wind tunnels only; m "):
        check_with(cfg, _open(windtunnel=False, n_layers=2))


def test_an_open_model_decides_the_layer_count(tmp_path):
    cfg = DetectConfig(out=tmp_path / "d", layers=(35,))
    with pytest.raises(ExperimentError, match="smollm2-135m-instruct has 30 layers"):
        check_with(cfg, None)
    check_with(cfg, _open(windtunnel=False, n_layers=40))
    with pytest.raises(ExperimentError, match="m has 12 layers"):
        check_with(cfg, _open(windtunnel=False, n_layers=12))


def test_a_task_typo_and_a_token_task_for_a_text_model(tmp_path):
    with pytest.raises(ExperimentError, match=r"unknown task 'bijectoin'; did you mean "
                                              r"'bijection'\?"):
        SteerConfig(out=tmp_path / "s", task="bijectoin").check()
    with pytest.raises(ExperimentError, match="text model, which runs the in-context task"):
        SteerConfig(out=tmp_path / "s", task="hmm").check()
    check_with(SteerConfig(out=tmp_path / "s", task="hmm"), _open(windtunnel=True, n_layers=2))
