import json
import math
import shutil
import subprocess
import sys

import pytest

from bayesgeom.analyses.cli import main

TINY = [
    "--preset",
    "tiny",
    "--V",
    "6",
    "--steps",
    "20",
    "--batch-size",
    "16",
    "--eval-every",
    "20",
    "--eval-size",
    "32",
    "--no-progress",
]


def test_sample_json_has_posteriors(capsys):
    assert (
        main(["windtunnel", "sample", "--task", "bijection", "--n", "2", "--seed", "3", "--json"])
        == 0
    )
    out = json.loads(capsys.readouterr().out)
    assert out["task"]["task"] == "bijection" and len(out["sequences"]) == 2
    first = out["sequences"][0]["supervised"][0]
    assert len(first["posterior"]) == 20
    assert first["entropy_bits"] == pytest.approx(math.log2(20), abs=1e-6)


def test_sample_hmm_text(capsys):
    assert main(["windtunnel", "sample", "--task", "hmm", "--K", "3", "--n", "1"]) == 0
    assert "H_Bayes=" in capsys.readouterr().out


def test_task_options_come_from_the_registry(capsys, monkeypatch):
    """A newly registered task gets its command-line options with no CLI edit."""
    from dataclasses import dataclass

    import numpy as np

    from bayesgeom.records import option
    from bayesgeom.windtunnel import PosteriorPrompts, Task, task_registry
    from bayesgeom.windtunnel.task import config_dict
    from bayesgeom.windtunnel.task_registry import register_task

    @dataclass(frozen=True)
    class CoinConfig:
        bias: float = option(0.5, "coin: the chance of heads", min=0.0, max=1.0)

    class CoinTask(Task):
        name = "coin"

        def __init__(self, cfg: CoinConfig):
            self.cfg = cfg

        def config(self) -> dict:
            return config_dict(self.name, self.cfg)

        def posterior_prompts(self, n: int, seed: int) -> PosteriorPrompts:
            p = np.tile([self.cfg.bias, 1 - self.cfg.bias], (n, 1))
            return PosteriorPrompts(name="coin", prompts=["toss:"] * n, bayes=p,
                                    group=np.zeros(n), hyp_words=("heads", "tails"))

    monkeypatch.setitem(task_registry.TASKS, "coin", None)
    register_task(CoinConfig)(CoinTask)
    assert main(["windtunnel", "sample", "--task", "coin", "--bias", "0.9", "--n", "2",
                 "--json"]) == 0
    out = json.loads(capsys.readouterr().out)
    assert out["hypotheses"] == ["heads", "tails"] and out["prompts"][0]["posterior"] == [0.9,
                                                                                           0.1]
    assert main(["windtunnel", "sample", "--task", "coin", "--bias", "2"]) == 2
    assert "bias must be <= 1" in capsys.readouterr().err
    assert main(["windtunnel", "sample", "--task", "bijection", "--bias", "0.2"]) == 2
    assert "does not apply to task 'bijection'" in capsys.readouterr().err


@pytest.mark.parametrize(
    "argv, msg",
    [
        (["windtunnel", "sample", "--task", "nope"], "unknown task 'nope'; available: "),
        (["windtunnel", "sample", "--V", "1"], "V must be >= 2"),
        (["windtunnel", "sample", "--V", "5", "--L", "9"], "without replacement"),
        (["windtunnel", "sample", "--task", "hmm", "--V", "5"], "does not apply"),
        (["windtunnel", "train", "--arch", "cnn", "--out", "X"], "invalid choice: 'cnn'"),
        (["windtunnel", "train", "--preset", "huge", "--out", "X"], "invalid choice: 'huge'"),
        (["windtunnel", "train", "--steps", "0", "--out", "X"], "steps must be >= 1"),
        (["windtunnel", "train", "--task", "sula", "--out", "X"], "text task"),
        (["windtunnel", "train", "--out"], "expected one argument"),
        (["windtunnel", "eval", "X"], "does not exist"),
    ],
)
def test_bad_input_gives_one_clear_error(argv, msg, tmp_path, capsys, monkeypatch):
    monkeypatch.chdir(tmp_path)
    assert main(argv) == 2
    err = capsys.readouterr().err
    assert msg in err and err.startswith("bayesgeom: error:")
    assert not (tmp_path / "X").exists()


def test_train_then_eval_json_and_refuse_other_run(tmp_path, capsys):
    out = str(tmp_path / "run")
    assert main(["windtunnel", "train", *TINY, "--out", out]) == 0
    capsys.readouterr()
    assert main(["windtunnel", "eval", out, "--json", "--n", "64"]) == 0
    res = json.loads(capsys.readouterr().out)
    for k in (
        "task",
        "arch",
        "params",
        "steps",
        "entropy_mae_bits",
        "kl_bits",
        "tvd",
        "accuracy",
        "per_position",
        "per_layer",
    ):
        assert k in res
    assert res["steps"] == 20 and len(res["per_position"]["h_bayes_bits"]) == 5
    before = (tmp_path / "run" / "eval.json").read_bytes()
    assert main(["windtunnel", "train", *TINY, "--seed", "9", "--out", out]) == 2
    assert "holds a finished windtunnel train run with other settings (seed 0 -> 9); choose " \
        "another --out, or pass --restart to replace it" in capsys.readouterr().err
    assert (tmp_path / "run" / "eval.json").read_bytes() == before


def test_eval_reports_a_corrupt_model(tmp_path, capsys):
    out = tmp_path / "run"
    assert main(["windtunnel", "train", *TINY, "--out", str(out)]) == 0
    (out / "model" / "model.safetensors").write_bytes(b"\0" * 10)
    assert main(["windtunnel", "eval", str(out)]) == 1  # a damaged file: a fault
    assert "model.safetensors has 10 bytes" in capsys.readouterr().err


def test_console_script_exit_status(scaled):
    exe = shutil.which("bayesgeom") or f"{sys.prefix}/bin/bayesgeom"
    p = subprocess.run(
        [exe, "windtunnel", "sample", "--task", "nope"], capture_output=True, text=True,
        timeout=scaled(120))
    assert p.returncode == 2 and "unknown task 'nope'" in p.stderr
    assert len(p.stderr.strip().splitlines()) == 1  # one line, no traceback, no usage dump
