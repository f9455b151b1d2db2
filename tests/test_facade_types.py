"""The façade's run functions say what they take when handed something else (a dict of
settings from a notebook was an ``AttributeError`` from deep inside)."""

from __future__ import annotations

import pytest

import bayesgeom as bg


@pytest.mark.parametrize("name, config", [("train", "TrainConfig"),
                                          ("run_steer", "SteerConfig"),
                                          ("run_compare", "CompareConfig"),
                                          ("run_geometry", "GeometryConfig")])
def test_a_dict_for_a_config_is_one_line_saying_what_to_pass(name, config, tmp_path):
    run = getattr(bg, name)
    args = ({"task": "hmm"}, tmp_path / "run") if name == "train" else ({"quick": True},)
    with pytest.raises(TypeError) as e:
        run(*args)
    assert str(e.value) == f"{name} takes a {config}, got a dict: pass {config}(**that_dict)"
    assert not (tmp_path / "run").exists()
