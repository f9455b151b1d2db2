"""The command line derived from the configs: every declared option appears once, absent flags
keep the config's defaults, given flags reach the config, and bad values are one line."""

from __future__ import annotations

import dataclasses

import pytest

from bayesgeom.analyses.cli import build_parser, main
from bayesgeom.analyses.compare.run import CompareConfig
from bayesgeom.analyses.demo.run import DemoConfig
from bayesgeom.analyses.geometry.run import GeometryConfig
from bayesgeom.analyses.kit.options import PARENT_FIELDS, config_from_args
from bayesgeom.analyses.steer.run import SteerConfig
from bayesgeom.analyses.sula.run import SulaConfig
from bayesgeom.records import declared

REQUIRED = {"geometry": ["--out", "o"], "steer": ["--out", "o"], "sula": ["--out", "o"],
            "compare": ["--out", "o", "--models", "a"], "demo": []}
CONFIGS = {"geometry": GeometryConfig, "steer": SteerConfig, "sula": SulaConfig,
           "compare": CompareConfig, "demo": DemoConfig}


def _parse(cmd: str, *args: str):
    return build_parser().parse_args([cmd, *REQUIRED[cmd], *args])


@pytest.mark.parametrize("cmd", sorted(CONFIGS))
def test_absent_flags_keep_the_config_defaults(cmd):
    cls = CONFIGS[cmd]
    got = config_from_args(cls, _parse(cmd))
    want = cls()
    for f, opt in declared(cls):
        if not opt.required and f.name not in ("out", "models"):
            assert getattr(got, f.name) == getattr(want, f.name), f.name


@pytest.mark.parametrize("cmd", sorted(CONFIGS))
def test_every_declared_option_is_a_flag(cmd):
    parser = build_parser()
    sub = next(a for a in parser._actions if a.dest == "cmd").choices[cmd]
    dests = {a.dest for a in sub._actions}
    for f, opt in declared(CONFIGS[cmd]):
        if f.name in PARENT_FIELDS:  # set by the parent parser's flag (--no-progress ...)
            assert PARENT_FIELDS[f.name][0] in dests and not opt.cli, f.name
        else:
            assert (f.name in dests) == opt.cli, f.name


def test_given_flags_reach_the_config():
    ns = _parse("steer", "--layers", "0,-1", "--cut", "0.5,1", "--no-keep-only", "--shift",
                "none", "--labels", "lug,mip", "--no-progress", "--n-random", "7")
    cfg = config_from_args(SteerConfig, ns)
    assert cfg.layers == (0, -1) and cfg.cut_fractions == (0.5, 1.0) and not cfg.keep_only
    assert cfg.shift_deltas == () and cfg.labels == ("lug", "mip") and cfg.n_random == 7
    assert cfg.progress is False
    g = config_from_args(GeometryConfig, _parse("geometry", "--prompts", "mixed,math", "code",
                                                "--layers", "0-2"))
    assert g.prompts == ("mixed", "math", "code") and g.layers == (0, 1, 2)
    c = build_parser().parse_args(["compare", "--models", "a", "b", "--out", "o",
                                   "--n-per-quintile", "4"])
    cfg = config_from_args(CompareConfig, c, geometry=config_from_args(GeometryConfig, c))
    assert cfg.models == ("a", "b") and cfg.geometry.n_per_quintile == 4


@pytest.mark.parametrize("argv, msg", [
    (["steer", "--out", "o", "--n-random", "0"], "n_random must be >= 1"),
    (["steer", "--out", "o", "--cut", "x"], "expected comma-separated numbers"),
    (["sula", "--out", "o", "--alpha", "nan"], "alpha must be finite"),
    (["geometry", "--out", "o", "--dtype", "fp8"], "invalid choice: 'fp8'"),
    (["geometry"], "the following arguments are required: --out"),
    (["nope"], "invalid choice: 'nope'"),
])
def test_bad_values_are_one_line(argv, msg, capsys, tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    assert main(argv) == 2
    err = capsys.readouterr().err
    assert msg in err and len(err.strip().splitlines()) == 1
    assert not (tmp_path / "o").exists()


def test_configs_are_plain_dataclasses():
    for cls in CONFIGS.values():
        assert dataclasses.is_dataclass(cls)
