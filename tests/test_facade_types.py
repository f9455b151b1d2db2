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


def _run_functions() -> list[tuple[str, object, type]]:
    """(name, run function, config class) of every experiment in the registry, and the façade's
    own ``run_*`` functions (each is one of them)."""
    import importlib

    from bayesgeom.analyses.registry import experiments

    out = []
    for e in experiments():
        fn = getattr(importlib.import_module(e.run.module), e.run.name)
        out.append((e.run.name, fn, e.config))
    return out


RUNS = _run_functions()


def test_every_facade_run_function_is_in_the_table():
    facade = {n for n in bg.__all__ if n.startswith("run_")}
    assert facade and facade <= {name for name, _, _ in RUNS}


@pytest.mark.parametrize("name, run, config", RUNS, ids=[r[0] for r in RUNS])
@pytest.mark.parametrize("wrong", [{"quick": True}, "geometry", None], ids=["dict", "str", "None"])
def test_every_run_function_names_the_config_it_takes(name, run, config, wrong):
    """A dict (or a command name, or nothing) handed to any experiment's ``run_*`` is one line
    naming the config class, not an ``AttributeError`` from inside (issue 38, cause 8)."""
    with pytest.raises(TypeError) as e:
        run(wrong)
    article = "an" if config.__name__[0] in "AEIOU" else "a"
    assert str(e.value).startswith(f"{name} takes {article} {config.__name__}, got "), e.value
    if isinstance(wrong, dict):
        assert str(e.value).endswith(f"pass {config.__name__}(**that_dict)")
