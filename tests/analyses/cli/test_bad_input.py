"""The bad-input table: every option with a range, on every command, and the bad files, folders
and pipes a user meets -- each gives one line ``bayesgeom: error: ...``, the right exit status
(2: usage, 1: fault), no traceback and no partial output."""

from __future__ import annotations

import dataclasses
import errno
import os
import subprocess
import sys
import time
import typing
from pathlib import Path
from typing import Any

import pytest

from bayesgeom.analyses.cli import main
from bayesgeom.analyses.commands.capture import CaptureOptions
from bayesgeom.analyses.commands.windtunnel import EvalOptions, SampleOptions
from bayesgeom.analyses.geometry.run import GeometryConfig
from bayesgeom.analyses.kit.options import _strip_optional
from bayesgeom.analyses.registry import experiments
from bayesgeom.records import declared
from bayesgeom.records.options import bound_text, flag_of
from bayesgeom.windtunnel import TASKS
from bayesgeom.windtunnel.training import TrainConfig

from .declared_options import each_option

#: command -> (argv before the option, config class); X is the output folder (never created).
#: Every registered experiment is in it (from the registry: a new one joins the table by itself)
COMMANDS: dict[str, tuple[list[str], type]] = {
    "compare-geometry": (["compare", "--models", "default", "--out", "X"], GeometryConfig),
    "capture": (["capture", "--prompts", "p.txt", "--sites", "logits", "--out", "X"],
                CaptureOptions),
    "train": (["windtunnel", "train", "--out", "X"], TrainConfig),
    "sample": (["windtunnel", "sample"], SampleOptions),
    "eval": (["windtunnel", "eval", "X"], EvalOptions),
}
for _e in experiments():
    _argv = [*([_e.group] if _e.group else []), _e.name, "--out", "X"]
    _argv += ["R"] * sum(1 for _, o in declared(_e.config) if o.flag and o.flag[0] != "-")
    _argv += ["--models", "default"] if _e.name == "compare" else []
    COMMANDS[" ".join(_argv[:2]) if _e.group else _e.name] = (_argv, _e.config)
for _name, _reg in TASKS.items():  # each task's own options, on train (token tasks) or sample
    _cmd = ["windtunnel", "train", "--out", "X"] if _name != "sula" else ["windtunnel", "sample"]
    COMMANDS[f"task-{_name}"] = ([*_cmd, "--task", _name], _reg.config_cls)


def _bad_values(f: dataclasses.Field, opt: Any, tp: Any) -> list[tuple[str, str]]:
    """(command-line value, expected message) that break ``f``'s declared range."""
    integer = _strip_optional(tp) is int or typing.get_args(tp)[:1] == (int,)
    rows = []
    def text(x: float) -> str:
        return str(int(x)) if integer else f"{x:g}"

    if opt.above is not None:
        rows.append((text(opt.above), f"{f.name} must be > {bound_text(opt.above)}"))
    if opt.min is not None:
        low = opt.min - 1 if integer else opt.min - max(1.0, abs(opt.min))
        rows.append((text(low), f"{f.name} must be >= {bound_text(opt.min)}"))
    if opt.max is not None:
        rows.append((text(opt.max + 1), f"{f.name} must be <= {bound_text(opt.max)}"))
    if not integer and rows:
        rows.append(("nan", f"{f.name} must be finite"))
    return rows


def _range_cases() -> list[Any]:
    cases = []
    for cmd, argv, _, f, opt, tp in each_option(COMMANDS, with_choices=False):
        flag = flag_of(f, opt)
        for value, msg in _bad_values(f, opt, tp):
            cases.append(pytest.param([*argv, flag, value], msg, 2, id=f"{cmd} {flag} {value}"))
    return cases


RANGE_CASES = _range_cases()


def _one_clear_line(err: str) -> str:
    assert "Traceback" not in err, err
    lines = [line for line in err.splitlines() if line.strip()]
    assert len(lines) == 1 and lines[0].startswith("bayesgeom: error: "), err
    return lines[0]


def test_the_table_covers_every_ranged_option_of_the_issue():
    ids = {p.id for p in RANGE_CASES}
    for case in ("train --eval-every 0", "train --ckpt-every 0", "train --dense-ckpt-every 0",
                 "train --eval-size 0", "train --lr 0", "train --lr nan", "train --grad-clip 0",
                 "eval --n 0", "detect --seed -1", "verify --seed -1", "monitor --seed -1",
                 "dynamics verify --seed -1", "detect --seed 18446744073709551616",
                 "train --seed 18446744073709551616", "sweep --seeds -1", "sample --seed -1"):
        assert case in ids, case
    assert len(RANGE_CASES) >= 50  # 55 when written: a declaration lost would show here


@pytest.mark.parametrize("argv, msg, status", RANGE_CASES)
def test_an_option_out_of_range_is_one_line_and_writes_nothing(argv, msg, status, tmp_path,
                                                               capsys, monkeypatch):
    monkeypatch.chdir(tmp_path)
    assert main(argv) == status
    assert msg in _one_clear_line(capsys.readouterr().err)
    assert not (tmp_path / "X").exists()


@pytest.mark.parametrize("argv, msg", [
    (["windtunnel", "train", "--lr", "-0.01", "--out", "X"], "lr must be > 0"),
    (["windtunnel", "train", "--grad-clip", "-1", "--out", "X"], "grad_clip must be > 0"),
    (["windtunnel", "train", "--steps", "1.5", "--out", "X"], "invalid int value: '1.5'"),
    (["steer", "--shift", "1,inf", "--out", "X"], "shift_deltas must be finite"),
    (["capture", "--prompts", "p.txt", "--sites", "logits", "--positions", "x", "--out", "X"],
     "positions must be 'last', 'all' or comma-separated indices"),
    # a prior whose log-weights overflow was a NaN prior and a silent perfect score
    (["windtunnel", "train", "--task", "long_recall", "--prior", "gaussian", "--prior-scale",
      "1e-300", "--preset", "tiny", "--steps", "20", "--out", "X"],
     "long_recall: a gaussian prior of scale 1e-300 (shape 1) over 64 hypotheses is not a "
     "finite distribution"),
    (["windtunnel", "sample", "--task", "long_recall", "--prior", "generalised_gaussian",
      "--prior-shape", "1000", "--prior-scale", "1e-3"], "is not a finite distribution"),
    # an empty --out was the current folder; a list naming a run twice was run twice
    (["detect", "--out", ""], "argument --out: an empty path; give the output folder"),
    (["windtunnel", "train", "--out", ""], "argument --out: an empty path"),
    (["extrapolate", "--archs", "llama", "llama", "--out", "X"],
     "archs names llama more than once"),
    (["sweep", "--seeds", "0,0", "--out", "X"], "seeds names 0 more than once"),
    # monitor: refused before detect, verify and geometry run, not after (or never)
    (["monitor", "--separation-sets", "foo,bar", "--out", "X"],
     "--separation-sets: unknown domain(s) foo, bar; choose two of code"),
    (["monitor", "--extrapolation", ".", "--out", "X"],
     "--extrapolation . is not a `bayesgeom extrapolate` run (it is empty)"),
])
def test_more_bad_options(argv, msg, tmp_path, capsys, monkeypatch):
    monkeypatch.chdir(tmp_path)
    assert main(argv) == 2
    assert msg in _one_clear_line(capsys.readouterr().err)
    assert not (tmp_path / "X").exists()


@pytest.mark.parametrize("args, msg", [
    (["--V", "10000000"], "lower --V or --L or --n"),
    (["--V", "100000"], "(2 sequences of 199,997 tokens, 99,999 positions x 100,000 hypotheses"),
    (["--task", "long_recall", "--value-vocab", "10000000"], "lower --length or --value-vocab"),
    (["--task", "long_recall", "--length", "64000000"], "2 sequences of 64,000,000 tokens"),
])
def test_a_sample_too_large_is_refused_before_it_is_drawn(args, msg, capsys):
    """The size a sample would print (and its memory, as ``train`` estimates it) is checked
    first: refused at once with the estimate, where drawing it took minutes and GBs."""
    t0 = time.perf_counter()
    assert main(["windtunnel", "sample", *args]) == 2
    line = _one_clear_line(capsys.readouterr().err)
    assert msg in line and "windtunnel sample would print" in line, line
    assert time.perf_counter() - t0 < 5, "refused only after drawing"


def test_a_sample_too_large_is_refused_from_the_python_api_too():
    from bayesgeom.windtunnel import TaskConfigError, make_task
    from bayesgeom.windtunnel.inspect import sample_records

    with pytest.raises(TaskConfigError, match="windtunnel sample would print"):
        sample_records(make_task("bijection", V=100000), 2, 0)


SEEDED = [e for e in experiments() if "seed" in {f.name for f in dataclasses.fields(e.config)}]


@pytest.mark.parametrize("experiment", SEEDED, ids=lambda e: e.name)
def test_a_seed_out_of_range_is_refused_from_the_python_api(experiment, tmp_path):
    from bayesgeom.analyses.kit import ExperimentError

    for seed, msg in ((-1, "seed must be >= 0"), (2**64, r"seed must be <= 2\*\*64 - 1")):
        with pytest.raises(ExperimentError, match=msg):
            experiment.config(out=tmp_path / "x", seed=seed).check()


def test_a_prior_that_overflows_is_refused_from_the_python_api_too():
    from bayesgeom.windtunnel import TaskConfigError, make_task

    with pytest.raises(TaskConfigError, match="is not a finite distribution"):
        make_task("long_recall", prior="gaussian", prior_scale=1e-300)
    tight = make_task("long_recall", prior="gaussian", prior_scale=1e-150)  # finite: kept
    assert tight.prior is not None and abs(tight.prior.sum() - 1) < 1e-12


# ---------------------------------------------------------------- files and folders
@pytest.mark.parametrize("content, msg", [
    (b"caf\xe9\n", r"is not UTF-8 text (byte 0xe9 on line 1); save it as UTF-8"),
    (b"", "holds no prompts"),
    (b"one\n\ntwo\n", "line 2 is empty"),
    (b"one\ntw\x00o\n", "line 2 holds a NUL byte; save the prompts as plain text"),
    (None, "is a directory; pass a text file"),
])
def test_bad_prompt_files(content, msg, tmp_path, capsys, monkeypatch):
    monkeypatch.chdir(tmp_path)
    p = tmp_path / "p.txt"
    if content is None:
        p.mkdir()
    else:
        p.write_bytes(content)
    assert main(["capture", "--prompts", "p.txt", "--sites", "logits", "--out", "X"]) == 2
    assert msg in _one_clear_line(capsys.readouterr().err)
    assert not (tmp_path / "X").exists()


def test_a_bom_is_not_part_of_the_first_prompt(tmp_path):
    from bayesgeom.analyses.commands.capture import read_prompts

    p = tmp_path / "p.txt"
    p.write_bytes("\ufeffhello\r\nworld\n".encode())
    assert read_prompts(p) == ["hello", "world"]


def test_an_out_that_is_a_file_is_one_line(tmp_path, capsys, monkeypatch):
    monkeypatch.chdir(tmp_path)
    Path("X").write_text("a file")
    assert main(["windtunnel", "train", "--preset", "tiny", "--steps", "2", "--out", "X"]) == 2
    assert "X is a file, not a directory; choose another --out" in \
        _one_clear_line(capsys.readouterr().err)
    assert Path("X").read_text() == "a file"


@pytest.mark.parametrize("code, msg, status", [
    (errno.EROFS, "the file system is read-only; choose another --out", 1),
    (errno.EACCES, "permission denied; choose another --out", 1),
    (errno.ENOSPC, "no space left on the device holding", 1),
])
def test_os_faults_on_the_output_folder_are_one_line(code, msg, status, tmp_path, capsys,
                                                      monkeypatch):
    monkeypatch.chdir(tmp_path)
    real = Path.mkdir

    def fail(self, *a, **k):
        if self.name == "X":
            raise OSError(code, os.strerror(code))
        return real(self, *a, **k)

    monkeypatch.setattr(Path, "mkdir", fail)
    assert main(["windtunnel", "train", "--preset", "tiny", "--steps", "2", "--out", "X"]) == \
        status
    assert msg in _one_clear_line(capsys.readouterr().err)


def test_a_closed_stdout_pipe_is_quiet(tmp_path):
    code = ("import sys; from bayesgeom.analyses.cli import main; "
            "sys.exit(main(['windtunnel', 'sample', '--n', '400', '--json']))")
    p = subprocess.Popen([sys.executable, "-c", code], stdout=subprocess.PIPE,
                         stderr=subprocess.PIPE, cwd=tmp_path)
    assert p.stdout is not None and p.stderr is not None
    p.stdout.read(10)
    p.stdout.close()  # the reader goes away, as `| head -c 10` does
    err = p.stderr.read().decode()
    assert p.wait(120) == 141 and "Traceback" not in err and "BrokenPipe" not in err, err


def test_a_bad_demo_model_fails_before_training(tmp_path, capsys, monkeypatch):
    monkeypatch.chdir(tmp_path)
    t0 = time.perf_counter()
    assert main(["demo", "--quick", "--model", "./no/such/model", "--out", "X"]) == 2
    assert time.perf_counter() - t0 < 30
    assert "no such model directory" in _one_clear_line(capsys.readouterr().err)
    assert not (tmp_path / "X").exists()



# ---------------------------------------------------------------- foreign output folders
@pytest.mark.parametrize("argv", [
    ["geometry"], ["sula"], ["steer"], ["compare", "--models", "default"], ["demo", "--quick"],
    ["windtunnel", "train", "--preset", "tiny", "--steps", "2"],
], ids=lambda a: a[0] if a[0] != "windtunnel" else "train")
def test_every_experiment_refuses_a_folder_of_other_files(argv, tmp_path, capsys):
    out = tmp_path / "mine"
    out.mkdir()
    (out / "notes.txt").write_text("keep me")
    assert main([*argv, "--out", str(out), "--no-progress"]) == 2
    assert "holds files that are not a bayesgeom run (notes.txt)" in \
        _one_clear_line(capsys.readouterr().err)
    assert [p.name for p in out.iterdir()] == ["notes.txt"]  # not even a lock file
    assert (out / "notes.txt").read_text() == "keep me"


def test_an_experiment_refuses_another_commands_run(tmp_path, capsys):
    out = tmp_path / "run"
    tiny = ["--preset", "tiny", "--V", "6", "--steps", "4", "--batch-size", "8",
            "--eval-every", "4", "--eval-size", "16", "--no-progress"]
    assert main(["windtunnel", "train", *tiny, "--out", str(out)]) == 0
    capsys.readouterr()
    before = {p.name: p.stat().st_mtime_ns for p in out.iterdir()}
    assert main(["steer", "--out", str(out), "--no-progress"]) == 2
    assert "holds a bayesgeom windtunnel train run; choose another --out" in \
        _one_clear_line(capsys.readouterr().err)
    assert {p.name: p.stat().st_mtime_ns for p in out.iterdir()} == before


def test_capture_refuses_a_folder_of_other_files(tmp_path, capsys):
    out = tmp_path / "mine"
    out.mkdir()
    (out / "notes.txt").write_text("keep me")
    (tmp_path / "p.txt").write_text("hello world\n")
    assert main(["capture", "--prompts", str(tmp_path / "p.txt"), "--sites", "logits",
                 "--out", str(out), "--no-progress"]) == 2
    assert "notes.txt" in _one_clear_line(capsys.readouterr().err)
    assert [p.name for p in out.iterdir()] == ["notes.txt"]


@pytest.mark.parametrize("device, msg", [
    ("foo", "unknown device 'foo'; this machine has: cpu"),
    ("cuda:99", "device 'cuda:99' "),  # not available (no GPU) or does not exist (a GPU)
])
def test_a_device_this_machine_lacks_is_one_line(device, msg, tmp_path, capsys, monkeypatch):
    monkeypatch.chdir(tmp_path)
    Path("p.txt").write_text("hello\n")
    assert main(["capture", "--prompts", "p.txt", "--sites", "logits", "--device", device,
                 "--out", "X"]) == 2
    line = _one_clear_line(capsys.readouterr().err)
    assert msg in line, line
    assert not (tmp_path / "X").exists()
