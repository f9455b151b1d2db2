"""An option the run would ignore is refused (issue 38, cause 5): given while the option it
``needs`` is off (``--plateau-tol`` without ``--plateau-window``, ``--deep-seeds`` without
``--deep``), given for the other kind of model (``detect --n-tokens`` on a wind tunnel), an empty
list where leaving the option out means its default (``--prompts ""``), or a plateau window
that cannot fire before ``--steps``. Each is one line, exit status 2, before anything loads; the
cases are derived from the declarations (:func:`records.option`'s ``needs``), so an option that
declares a dependency joins the table by itself."""

from __future__ import annotations

import dataclasses
import typing
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from bayesgeom.analyses.cli import main
from bayesgeom.analyses.kit.errors import ExperimentError
from bayesgeom.analyses.kit.model_facts import TEXT, WIND_TUNNEL
from bayesgeom.analyses.kit.options import _strip_optional
from bayesgeom.records import declared
from bayesgeom.records.options import OptionError, _unread, default_of, flag_of
from bayesgeom.windtunnel.names import TaskConfigError
from bayesgeom.windtunnel.train_config import TrainConfig

from .declared_options import each_option, experiment_commands

#: every config with declared options: the experiments' (from the registry) and training's,
#: each with its command line (X: the output folder, never created)
CONFIGS: dict[str, tuple[list[str], type]] = {"train": (["windtunnel", "train"], TrainConfig),
                                              **experiment_commands()}


def _other_value(f: dataclasses.Field, opt: Any, tp: Any) -> tuple[Any, str]:
    """A value of ``f`` other than its default and inside its declaration: (value, its
    command-line text)."""
    default, tp = default_of(f), _strip_optional(tp)
    if tp is bool:
        return (not default), ""
    if opt.choices is not None:
        value = next(c for c in opt.choices if c != default)
        return value, str(value)
    if tp is int:
        value = (default or 0) + 1
        if opt.max is not None and value > opt.max:
            value = default - 1
        return value, str(value)
    if tp is float:
        value = (default or 0.0) / 2 if default else 0.5
        low = opt.above if opt.above is not None else opt.min
        if low is not None and default and value <= low:  # halfway to the bound instead
            value = (default + low) / 2
        return value, f"{value:g}"
    if typing.get_origin(tp) is tuple and typing.get_args(tp)[:1] == (str,):
        return ("a prompt",), "a prompt"
    if typing.get_origin(tp) is tuple and typing.get_args(tp)[:1] == (int,) and default:
        value = (*default, max(default) + 1)  # one more element, past the largest
        return value, ",".join(map(str, value))
    if tp is Path:  # a file the option names (the check of its kind comes before reading it)
        return Path("pairs.jsonl"), "pairs.jsonl"
    if tp is str:  # a free name (a Slurm partition)
        return "p1", "p1"
    if typing.get_origin(tp) is dict:  # a JSON table (#SBATCH options)
        return {"qos": "high"}, '{"qos": "high"}'
    raise AssertionError(f"no other value for {f.name} ({tp})")


def _cases(wanted: Callable[[type, Any], bool]) -> list[Any]:
    """(command, argv, config class, field, option, a value other than its default, its text)
    of every option the command line offers that ``wanted(config class, option)`` picks."""
    cases = []
    for cmd, argv, cls, f, opt, tp in each_option(CONFIGS):
        if wanted(cls, opt):
            value, text = _other_value(f, opt, tp) if f.name != "labels" else (
                ("lug", "mip"), "lug,mip")
            cases.append(pytest.param(cmd, argv, cls, f, opt, value, text,
                                      id=f"{cmd} {flag_of(f, opt)}"))
    return cases


def _fields(cls: type) -> set[str]:
    return {g.name for g in dataclasses.fields(cls)}


def _need(opt: Any) -> tuple[str, str]:
    """(field, value) of an option's ``needs``: ``("plateau_window", "")`` (on), or
    ``("backend", "submitit")`` for ``"backend=submitit"``."""
    name, _, value = (opt.needs or "").partition("=")
    return name, value


#: options that need another option of their config on (or holding a value)
DEPENDENT = _cases(lambda cls, opt: _need(opt)[0] in _fields(cls))


def test_the_table_holds_the_issues_cases():
    ids = {p.id for p in DEPENDENT}
    for case in ("train --plateau-tol", "train --plateau-metric", "sweep --plateau-tol",
                 "sweep --plateau-metric", "dynamics em-vs-sgd --deep-seeds",
                 "dynamics em-vs-sgd --deep-steps",
                 "train --dense-ckpt-every", "stability --n-lengths",
                 "sweep --gpus-per-node", "sweep --slurm-partition",
                 "sweep --slurm-additional-parameters", "sweep --timeout-min"):
        assert case in ids, (case, sorted(ids))


def test_every_declared_need_names_a_field_or_a_kind_of_model():
    """A misspelt ``needs`` would make the rule silently absent."""
    for _, cls in CONFIGS.values():
        names = {f.name for f in dataclasses.fields(cls)}
        for f, opt in declared(cls):
            assert opt.needs in (None, TEXT, WIND_TUNNEL) or _need(opt)[0] in names, \
                (cls.__name__, f.name)


def _checked(cls: type, tmp_path: Path, **values: Any) -> None:
    cfg = cls(**values) if cls is TrainConfig else cls(out=tmp_path / "o", **values)
    if cls is TrainConfig:
        cfg.validate()
    else:
        cfg.check()


@pytest.mark.parametrize("cmd, argv, cls, f, opt, value, text", DEPENDENT)
def test_an_option_given_without_the_one_it_needs_is_refused(cmd, argv, cls, f, opt, value, text,
                                                             tmp_path, capsys, monkeypatch):
    monkeypatch.chdir(tmp_path)
    name, value_needed = _need(opt)
    without = f"--{name.replace('_', '-')}" + (f" {value_needed}" if value_needed else "")
    with pytest.raises((ExperimentError, TaskConfigError, OptionError),
                       match=f"is ignored without {without}"):
        _checked(cls, tmp_path, **{f.name: value})
    cli = [*argv, flag_of(f, opt), *([text] if text else []), "--out", "X"]
    assert main(cli) == 2
    err = [line for line in capsys.readouterr().err.splitlines() if line.strip()]
    assert len(err) == 1 and "is ignored without" in err[0], err
    assert not (tmp_path / "X").exists()


@pytest.mark.parametrize("cmd, argv, cls, f, opt, value, text", DEPENDENT)
def test_with_the_option_it_needs_it_is_read(cmd, argv, cls, f, opt, value, text, tmp_path):
    """The control: the same value beside the option it needs is not refused as ignored."""
    hints = typing.get_type_hints(cls)
    name, wanted = _need(opt)
    need, need_opt = next((g, o) for g, o in declared(cls) if g.name == name)
    on = True if _strip_optional(hints[need.name]) is bool else int(max(1, need_opt.min or 1))
    on = wanted or on
    values = {f.name: value, need.name: on}
    if need.name == "plateau_window":  # a window that can fire before the last step
        values.update(steps=5000, eval_every=100)
    try:
        _checked(cls, tmp_path, **values)
    except (ExperimentError, TaskConfigError, OptionError) as e:
        assert "is ignored" not in str(e), e


def test_a_default_is_never_refused(tmp_path):
    for _, cls in CONFIGS.values():
        cfg = cls() if cls is TrainConfig else cls(out=tmp_path / "o")
        assert _unread(cfg) is None, cls.__name__


# ---------------------------------------------------------------- the kind of model
@pytest.fixture
def wind_tunnel(tmp_path: Path) -> Path:
    """A folder a wind-tunnel run's record names as one (enough for the kind, torch-free)."""
    run = tmp_path / "wt"
    run.mkdir()
    (run / "run.json").write_text('{"experiment": "windtunnel train"}')
    return run


#: options that only one kind of model reads
KIND = _cases(lambda cls, opt: opt.needs in (TEXT, WIND_TUNNEL) and "model" in _fields(cls))


def test_the_kind_table_holds_the_issues_cases():
    ids = {p.id for p in KIND}
    for case in ("detect --n-tokens", "detect --n-prompts", "detect --max-tokens",
                 "detect --n-sequences", "verify --labels", "verify --n-per-k",
                 "dynamics verify --prompts", "dynamics verify --n-sequences",
                 "stability --base-length"):
        assert case in ids, (case, sorted(ids))


@pytest.mark.parametrize("cmd, argv, cls, f, opt, value, text", KIND)
def test_an_option_of_the_other_kind_of_model_is_refused(cmd, argv, cls, f, opt, value, text,
                                                         wind_tunnel, tmp_path, capsys,
                                                         monkeypatch):
    monkeypatch.chdir(tmp_path)
    model = str(wind_tunnel) if opt.needs == TEXT else None  # None: the embedded SmolLM2
    wrong = "a wind tunnel" if opt.needs == TEXT else "a text model"
    with pytest.raises(ExperimentError, match=f"applies to {opt.needs}s only; .* is {wrong}"):
        cls(out=tmp_path / "o", model=model, **{f.name: value}).check()
    cli = [*argv, *(["--model", model] if model else []), flag_of(f, opt), text, "--out", "X"]
    assert main(cli) == 2
    err = [line for line in capsys.readouterr().err.splitlines() if line.strip()]
    assert len(err) == 1 and f"applies to {opt.needs}s only" in err[0], err
    assert not (tmp_path / "X").exists()
    # the control: the right kind of model reads it
    right = None if opt.needs == TEXT else str(wind_tunnel)
    try:
        cls(out=tmp_path / "o", model=right, **{f.name: value}).check()
    except ExperimentError as e:
        assert "applies to" not in str(e), e


# ---------------------------------------------------------------- empty lists
def _empty_cases() -> list[Any]:
    cases = []
    for cmd, argv, cls, f, opt, tp in each_option(CONFIGS):
        if f.default is None and typing.get_origin(_strip_optional(tp)) is tuple \
                and (opt.flag or "-").startswith("-"):
            cases.append(pytest.param(argv, cls, f, opt, id=f"{cmd} {flag_of(f, opt)}"))
    return cases


EMPTY = _empty_cases()


def test_the_empty_table_holds_the_issues_cases():
    ids = {p.id for p in EMPTY}
    for case in ("geometry --prompts", "dynamics verify --prompts", "detect --layers"):
        assert case in ids, (case, sorted(ids))


@pytest.mark.parametrize("argv, cls, f, opt", EMPTY)
def test_an_empty_list_is_refused_not_read_as_the_default(argv, cls, f, opt, tmp_path, capsys,
                                                          monkeypatch):
    monkeypatch.chdir(tmp_path)
    assert main([*argv, flag_of(f, opt), "", "--out", "X"]) == 2
    err = [line for line in capsys.readouterr().err.splitlines() if line.strip()]
    assert len(err) == 1 and err[0].startswith("bayesgeom: error: "), err
    assert any(why in err[0] for why in ("names no", "expected two words", "takes 'all'")), err
    assert not (tmp_path / "X").exists()
    if cls is not TrainConfig:
        with pytest.raises(ExperimentError, match="names nothing"):
            cls(out=tmp_path / "o", **{f.name: ()}).check()


# ---------------------------------------------------------------- a plateau that cannot fire
@pytest.mark.parametrize("argv", [
    ["windtunnel", "train", "--steps", "100", "--eval-every", "50", "--plateau-window", "5"],
    ["sweep", "--plateau-window", "3"],  # 2000 steps, an evaluation every 1000
], ids=["train", "sweep"])
def test_a_plateau_window_the_steps_never_reach_is_refused(argv, tmp_path, capsys, monkeypatch):
    monkeypatch.chdir(tmp_path)
    assert main([*argv, "--out", "X"]) == 2
    err = [line for line in capsys.readouterr().err.splitlines() if line.strip()]
    assert len(err) == 1 and "cannot stop the run before --steps" in err[0], err
    assert not (tmp_path / "X").exists()


def test_the_plateau_boundary_from_the_python_api():
    """Warm-up 300, evaluations every 50, window 5: the rule first decides at step 350."""
    base = dict(eval_every=50, plateau_window=5, warmup_steps=300)
    with pytest.raises(TaskConfigError, match="first decides at step 350"):
        TrainConfig(steps=350, **base).validate()
    TrainConfig(steps=351, **base).validate()  # one step after it: the rule can stop the run
