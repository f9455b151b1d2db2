"""Nothing lost, nothing stale (issue 11): every bad option is one line (the same from the API
and the CLI, exit status 2, no run directory left), one writer per run directory, checksums
verified on every reuse, crashed runs restart in place, spelling out a default is the same run.
"""

import json
import math
import os
import shutil
import subprocess
import sys
import time
from pathlib import Path

import pytest
import torch
from safetensors.torch import load_file, save_file

from bayesgeom.analyses.cli import main
from bayesgeom.records import FaultError, RunDirError, UsageError, exit_code, verify_checksums
from bayesgeom.windtunnel import training as training
from bayesgeom.windtunnel.checkpoint import CheckpointError
from bayesgeom.windtunnel.runs import NotARunError, is_windtunnel_dir, load_run
from bayesgeom.windtunnel.task import TaskConfigError
from bayesgeom.windtunnel.training import DivergenceError, TrainConfig, train

from ..conftest import Killed, die_at

ROOT = Path(__file__).resolve().parents[2]
BASE = dict(preset="tiny", steps=20, batch_size=16, warmup_steps=2, eval_every=20,
            eval_size=32, ckpt_every=10)


def _cfg(task_params=None, task="bijection", **kw) -> TrainConfig:
    return TrainConfig(task=task, task_params={"V": 6} if task_params is None else task_params,
                       **{**BASE, "final_eval_size": 64, **kw})


@pytest.fixture(scope="module")
def finished(tmp_path_factory) -> Path:
    out = tmp_path_factory.mktemp("finished") / "run"
    train(_cfg(), out, progress=False)
    return out


@pytest.fixture
def run_copy(finished, tmp_path) -> Path:
    out = tmp_path / "run"
    shutil.copytree(finished, out)
    return out


# ---------------------------------------------------------------- bad options: one line, exit 2
BAD = [
    ({"lr": 0.0}, "lr must be > 0, got 0.0"),
    ({"lr": -0.01}, "lr must be > 0, got -0.01"),
    ({"lr": math.nan}, "lr must be finite, got nan"),
    ({"lr": math.inf}, "lr must be finite, got inf"),
    ({"grad_clip": 0.0}, "grad_clip must be > 0, got 0.0"),
    ({"grad_clip": -1.0}, "grad_clip must be > 0, got -1.0"),
    ({"max_minutes": 0.0}, "max_minutes must be > 0, got 0.0"),
    ({"steps": 0}, "steps must be >= 1, got 0"),
    ({"batch_size": 0}, "batch_size must be >= 1, got 0"),
    ({"eval_every": 0}, "eval_every must be >= 1, got 0"),
    ({"eval_size": 0}, "eval_size must be >= 1, got 0"),
    ({"ckpt_every": 0}, "ckpt_every must be >= 1, got 0"),
    ({"dense_ckpt_every": 0}, "dense_ckpt_every must be >= 1, got 0"),
    ({"dense_ckpt_until": -1}, "dense_ckpt_until must be >= 0, got -1"),
    ({"warmup_steps": -1}, "warmup_steps must be >= 0, got -1"),
    ({"weight_decay": -0.5}, "weight_decay must be >= 0, got -0.5"),
    ({"seed": -1}, "seed must be >= 0, got -1"),
    ({"V": 1}, "task 'bijection': V must be >= 2, got 1"),
    ({"V": 5, "L": 9}, "L=9 keys cannot be drawn without replacement from V=5"),
    ({"V": 100_000}, "bijection V=100000 L=99999 needs about "),
    ({"task": "hmm", "K": 0}, "task 'hmm': K must be >= 1, got 0"),
]
TASK_KEYS = ("V", "L", "K")


def _split(kw: dict) -> tuple[TrainConfig, list[str]]:
    """The same bad run as an API config and as CLI flags."""
    task = kw.get("task", "bijection")
    params = {k: v for k, v in kw.items() if k in TASK_KEYS}
    fields = {k: v for k, v in kw.items() if k not in TASK_KEYS and k != "task"}
    if task == "bijection" and "V" not in params:
        params["V"] = 6
    cfg = TrainConfig(task=task, task_params=params, **{**BASE, **fields})
    argv = ["windtunnel", "train", "--task", task, "--no-progress"]
    for k, v in {**BASE, **fields, **params}.items():
        argv.append(f"--{k.replace('_', '-')}={v}")
    return cfg, argv


@pytest.mark.parametrize("kw, msg", BAD, ids=[",".join(map(str, k.items())) for k, _ in BAD])
def test_bad_option_is_one_line_the_same_from_api_and_cli(kw, msg, tmp_path, capsys):
    cfg, argv = _split(kw)
    with pytest.raises(TaskConfigError) as e:
        train(cfg, tmp_path / "api", progress=False)
    assert msg in str(e.value) and "\n" not in str(e.value)
    assert exit_code(e.value) == 2 and isinstance(e.value, UsageError)
    assert not (tmp_path / "api").exists()
    capsys.readouterr()
    assert main([*argv, "--out", str(tmp_path / "cli")]) == 2
    err = capsys.readouterr().err
    assert err == f"bayesgeom: error: {e.value}\n"
    assert not (tmp_path / "cli").exists()


def test_a_task_too_large_for_memory_is_refused_at_once(tmp_path):
    t = time.perf_counter()
    with pytest.raises(TaskConfigError, match=r"needs about [\d.]+ TiB for a batch of 16 "
                       r"sequences .* more than this machine's .*; lower --V or --L or "
                       r"--batch-size"):
        train(_cfg({"V": 100_000}), tmp_path / "r", progress=False)
    from bayesgeom.windtunnel import make_task

    with pytest.raises(TaskConfigError, match="lower --V or --L or the number of sequences"):
        make_task("bijection", V=100_000).sample(10**6, 0)  # two are cheap: a sparse posterior
    assert time.perf_counter() - t < 5


def test_eval_options_are_checked(tmp_path, capsys):
    assert main(["windtunnel", "eval", str(tmp_path), "--n", "0"]) == 2
    assert capsys.readouterr().err == "bayesgeom: error: n must be >= 1, got 0\n"


# ---------------------------------------------------------------- checksums on every reuse
def _kill_with_checkpoint(out: Path) -> Path:
    with pytest.raises(Killed):
        train(_cfg(), out, on_step=die_at(15), progress=False)
    return out / "checkpoints" / "step-0000010"


def test_truncated_checkpoint_is_detected_on_resume(tmp_path):
    ck = _kill_with_checkpoint(tmp_path / "r")
    w = ck / "model.safetensors"
    w.write_bytes(w.read_bytes()[:-100])
    with pytest.raises(CheckpointError, match=r"step-0000010/model.safetensors has \d+ bytes, "
                       r"\d+ were written \(truncated or altered\); rerun its windtunnel train "
                       "command with --restart") as e:
        train(_cfg(), tmp_path / "r", progress=False)
    assert exit_code(e.value) == 1
    assert train(_cfg(), tmp_path / "r", progress=False, restart=True).steps_done == 20


@pytest.mark.parametrize("name", ["model.safetensors", "optimizer.pt", "state.json"])
def test_altered_checkpoint_is_detected_on_resume(tmp_path, name):
    ck = _kill_with_checkpoint(tmp_path / "r")
    f = ck / name
    data = bytearray(f.read_bytes())
    data[len(data) // 2] ^= 0x01
    f.write_bytes(bytes(data))
    with pytest.raises(CheckpointError, match=f"{name} does not match its recorded checksum"):
        train(_cfg(), tmp_path / "r", progress=False)


def test_non_finite_checkpoint_weights_are_damage_not_a_learning_rate(tmp_path):
    ck = _kill_with_checkpoint(tmp_path / "r")
    w = load_file(ck / "model.safetensors")
    name = next(k for k, v in w.items() if v.is_floating_point())
    w[name] = torch.full_like(w[name], math.nan)
    save_file(w, ck / "model.safetensors", metadata={"format": "pt"})
    (ck / "checksums.json").unlink()  # as an older checkpoint without checksums
    with pytest.raises(CheckpointError, match=r"non-finite weights .* damaged") as e:
        train(_cfg(), tmp_path / "r", progress=False)
    assert "--lr" not in str(e.value)


def test_truncated_final_model_is_detected_on_rerun_and_eval(run_copy, capsys):
    w = run_copy / "model" / "model.safetensors"
    w.write_bytes(w.read_bytes()[: w.stat().st_size // 2])
    with pytest.raises(CheckpointError, match=r"model/model.safetensors has \d+ bytes.*"
                       "with --restart to train it again"):
        train(_cfg(), run_copy, progress=False)
    with pytest.raises(CheckpointError, match=r"model/model\.safetensors"):
        load_run(run_copy)
    assert main(["windtunnel", "eval", str(run_copy)]) == 1
    err = capsys.readouterr().err
    assert "model/model.safetensors" in err and len(err.strip().splitlines()) == 1
    res = train(_cfg(), run_copy, progress=False, restart=True)
    assert res.steps_done == 20 and load_run(run_copy).steps == 20


def _truncate(p: Path) -> None:
    p.write_bytes(p.read_bytes()[: max(1, p.stat().st_size // 2)])


@pytest.mark.parametrize("name, damage", [
    ("eval.json", lambda p: p.write_text("{not json")),
    ("eval.json", lambda p: p.write_text("[]")),
    ("metrics.parquet", _truncate),
    ("metrics.parquet", lambda p: p.write_bytes(b"PAR1 nonsense PAR1")),
    ("checksums.json", Path.unlink),
    ("model/checksums.json", Path.unlink),
    ("model/config.json", lambda p: p.write_text("{}")),
])
def test_damaged_outputs_of_a_finished_run_are_one_line(run_copy, name, damage):
    damage(run_copy / name)
    with pytest.raises(CheckpointError,
                       match=f"{name} .*; rerun its windtunnel train command with --restart") as e:
        train(_cfg(), run_copy, progress=False)
    assert "\n" not in str(e.value) and exit_code(e.value) == 1


@pytest.mark.parametrize("text, msg", [
    ("{not json", r"run.json is not valid JSON \(line 1\)"),
    ("[1, 2]", "run.json holds a JSON list, expected a dict"),
])
def test_corrupt_run_record_is_one_line(run_copy, text, msg, capsys):
    (run_copy / "run.json").write_text(text)
    with pytest.raises(FaultError, match=msg):
        train(_cfg(), run_copy, progress=False)
    with pytest.raises(CheckpointError, match=msg):
        load_run(run_copy)
    assert main(["windtunnel", "eval", str(run_copy)]) == 1
    err = capsys.readouterr().err
    assert "run.json" in err and len(err.strip().splitlines()) == 1


@pytest.mark.parametrize("record, msg", [
    ({"experiment": "windtunnel train", "config": {"arch": "transformer"}},
     "run.json lacks task"),
    ({"experiment": "windtunnel train", "config": {}, "task": {"task": "nope"}},
     "run.json holds no usable task record"),
    ({"experiment": "windtunnel train", "config": {}, "task": {"task": "bijection", "V": 6}},
     r"run.json names no architecture \(config.arch\)"),
])
def test_wrong_shaped_run_record_is_one_line_on_load(run_copy, record, msg):
    (run_copy / "run.json").write_text(json.dumps(record))
    with pytest.raises(CheckpointError, match=msg):
        load_run(run_copy)


def test_damaged_model_record_and_checkpoint_state_are_one_line(run_copy, tmp_path):
    (run_copy / "model" / "windtunnel.json").write_text("{")
    with pytest.raises(CheckpointError, match=r"windtunnel\.json"):
        load_run(run_copy / "model")
    ck = _kill_with_checkpoint(tmp_path / "r")
    (ck / "state.json").write_text("{}")
    (ck / "checksums.json").unlink()
    with pytest.raises(CheckpointError, match=r"state\.json lacks step"):
        load_run(tmp_path / "r")


def test_finished_run_records_checksums_of_what_is_reused(finished):
    verify_checksums(finished)
    verify_checksums(finished / "model")
    listed = json.loads((finished / "checksums.json").read_text())["files"]
    assert set(listed) == {"eval.json", "metrics.parquet"}
    ck = finished / "checkpoints" / "step-0000020"
    verify_checksums(ck)
    rec = json.loads((finished / "run.json").read_text())
    for k in ("experiment", "fingerprint", "settings", "status", "config", "task", "manifest",
              "params", "resumed_from_step", "stop_reason", "steps_done", "wall_s"):
        assert k in rec, k
    assert rec["experiment"] == "windtunnel train" and rec["status"] == "done"


# ---------------------------------------------------------------- which run a folder holds
def test_crashed_run_restarts_in_place_with_other_settings(tmp_path, capsys):
    with pytest.raises(Killed):
        train(_cfg(lr=0.05), tmp_path / "r", on_step=die_at(15), progress=False)
    capsys.readouterr()
    res = train(_cfg(lr=0.01), tmp_path / "r", progress=False)
    err = capsys.readouterr().err
    assert "restarting it in place (lr 0.05 -> 0.01)" in err and len(err.splitlines()) == 1
    rec = json.loads((tmp_path / "r" / "run.json").read_text())
    assert rec["settings"]["lr"] == 0.01 and rec["resumed_from_step"] is None
    assert res.steps_done == 20 and rec["status"] == "done"


def test_diverging_loss_names_the_step_and_the_rerun_restarts_in_place(tmp_path, monkeypatch):
    real = training.task_loss
    calls = []

    def loss(model, task, batch):
        calls.append(1)
        out = real(model, task, batch)
        return out * math.nan if len(calls) == 3 else out

    monkeypatch.setattr(training, "task_loss", loss)
    with pytest.raises(DivergenceError, match=r"loss became nan at step 3; lower --lr \(now "
                       r"0.005\) and rerun: the unfinished run in .* restarts in place") as e:
        train(_cfg(lr=5e-3), tmp_path / "r", progress=False)
    assert isinstance(e.value, FloatingPointError) and exit_code(e.value) == 1
    monkeypatch.setattr(training, "task_loss", real)
    assert train(_cfg(lr=1e-3), tmp_path / "r", progress=False).steps_done == 20


def test_finished_run_with_other_settings_needs_restart(run_copy, capsys):
    with pytest.raises(RunDirError, match=r"other settings \(seed 0 -> 3\)"):
        train(_cfg(seed=3), run_copy, progress=False)
    res = train(_cfg(seed=3), run_copy, progress=False, restart=True)
    assert res.steps_done == 20
    assert json.loads((run_copy / "run.json").read_text())["settings"]["seed"] == 3
    verify_checksums(run_copy)


def test_spelling_out_a_default_is_the_same_run(tmp_path, capsys):
    out = tmp_path / "r"
    cfg = _cfg({}, steps=4, eval_every=4, ckpt_every=4, eval_size=16, final_eval_size=16)
    first = train(cfg, out, progress=False)
    mtime = (out / "model" / "model.safetensors").stat().st_mtime_ns
    for params in ({"V": 20}, {"V": 20, "L": 19}, {"V": 20, "layout": "sepvocab"}):
        cfg.task_params = params
        again = train(cfg, out, progress=False)
        assert again.report.entropy_mae_bits == first.report.entropy_mae_bits
    assert (out / "model" / "model.safetensors").stat().st_mtime_ns == mtime
    capsys.readouterr()
    assert main(["windtunnel", "train", "--preset", "tiny", "--steps", "4", "--eval-every", "4",
                 "--ckpt-every", "4", "--eval-size", "16", "--batch-size", "16",
                 "--warmup-steps", "2", "--V", "20", "--no-progress", "--out", str(tmp_path / "c"),
                 "--json"]) == 0
    rec = json.loads((tmp_path / "c" / "run.json").read_text())
    assert rec["settings"]["task_params"] == {"V": 20, "L": 19, "layout": "sepvocab",
                                              "replacement": False, "query_from_context": True}


def test_other_experiments_run_records_are_not_windtunnel_runs(tmp_path):
    geo = tmp_path / "geo"
    geo.mkdir()
    (geo / "run.json").write_text(json.dumps({"experiment": "geometry", "fingerprint": "x",
                                              "status": "done", "settings": {}}))
    assert not is_windtunnel_dir(geo)
    with pytest.raises(NotARunError, match="holds a bayesgeom geometry run, not a wind-tunnel"):
        load_run(geo)
    with pytest.raises(RunDirError, match="holds a bayesgeom geometry run"):
        train(_cfg(), geo, progress=False)


def test_an_older_run_record_still_loads(run_copy):
    rec = json.loads((run_copy / "run.json").read_text())
    old = {k: rec[k] for k in ("config", "task", "status", "steps_done", "params")}
    (run_copy / "run.json").write_text(json.dumps(old))
    assert is_windtunnel_dir(run_copy)
    assert load_run(run_copy).steps == 20


@pytest.mark.slow
def test_two_writers_to_one_out_one_proceeds_the_other_is_refused(tmp_path, scaled):
    out = tmp_path / "race"
    env = {**os.environ, "HF_HUB_OFFLINE": "1", "PYTHONPATH": str(ROOT)}
    argv = [sys.executable, "-m", "bayesgeom", "windtunnel", "train", "--preset", "tiny",
            "--V", "6", "--steps", "100000", "--max-minutes", "0.15", "--batch-size", "8",
            "--eval-every", "100000", "--eval-size", "16", "--ckpt-every", "50",
            "--no-progress", "--out", str(out)]
    procs = [subprocess.Popen([*argv, "--seed", str(s)], cwd=ROOT, env=env, text=True,
                              stdout=subprocess.PIPE, stderr=subprocess.PIPE) for s in (0, 1)]
    results = [(p.wait(timeout=scaled(300)), *p.communicate()) for p in procs]
    codes = sorted(r[0] for r in results)
    assert codes == [0, 1], results
    winner = next(i for i, r in enumerate(results) if r[0] == 0)
    err = results[1 - winner][2].strip().splitlines()
    assert len(err) == 1 and "is in use by" in err[0], err
    rec = json.loads((out / "run.json").read_text())
    assert rec["status"] == "done" and rec["settings"]["seed"] == winner
    assert (out / "eval.json").exists()
    verify_checksums(out)
    verify_checksums(out / "model")
    assert load_run(out).steps == rec["steps_done"]
