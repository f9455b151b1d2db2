"""Fixtures for the geometry pipeline: the tiny random family models of ``tests/interp`` (same
tokenizer and configs, context widened to 512 so real-text prompts fit), a tiny trained
wind-tunnel run, and corpus paths that hold only what every machine has (the Python standard
library and /usr/share/common-licenses), whatever optional corpus packages are installed."""

from __future__ import annotations

import importlib.util
import os
import stat
import sys
from pathlib import Path

import pytest

from bayesgeom.analyses.prompts import corpora
from bayesgeom.analyses.prompts.corpora import CorpusPaths

_INTERP_CONFTEST = Path(__file__).resolve().parent.parent / "interp" / "conftest.py"


def _interp_fixtures():
    spec = importlib.util.spec_from_file_location("_interp_fixture_builders", _INTERP_CONFTEST)
    assert spec is not None and spec.loader is not None
    mod = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = mod  # dataclasses look their module up while executing it
    spec.loader.exec_module(mod)
    return mod


@pytest.fixture(scope="session")
def text_models(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    """family -> saved tiny random model with its tokenizer (RoPE families, context 512)."""
    fx = _interp_fixtures()
    tok = fx.train_tokenizer()
    root = tmp_path_factory.mktemp("geometry-models")
    out = {}
    for fam in ("gpt_neox", "phi", "llama", "mistral"):
        m = fx.tiny_hf_model(fam, len(tok))
        m.config.max_position_embeddings = 512
        m.save_pretrained(root / fam)
        tok.save_pretrained(root / fam)
        out[fam] = root / fam
    return out


@pytest.fixture(scope="session")
def windtunnel_run(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A wind-tunnel run directory (bijection V = 6, tiny preset, a few training steps)."""
    from bayesgeom.windtunnel.training import TrainConfig, train

    out = tmp_path_factory.mktemp("geometry-wt") / "run"
    cfg = TrainConfig(task="bijection", task_params={"V": 6}, arch="transformer",
                      preset="tiny", steps=20, seed=0, batch_size=16, eval_every=20,
                      eval_size=32, final_eval_size=64, ckpt_every=20, warmup_steps=2)
    train(cfg, out, progress=False)
    return out


@pytest.fixture
def base_corpora(monkeypatch: pytest.MonkeyPatch) -> CorpusPaths:
    """Only the standard library and the common licenses, as on a bare machine (also for the
    default ``CorpusPaths()`` the CLI uses): no Python corpus package, no R library."""
    monkeypatch.setattr(corpora, "package_dir", lambda module: None)
    monkeypatch.setattr(corpora, "R_LIBRARY_DIRS", ())
    for var in ("R_LIBS", "R_LIBS_USER", "R_LIBS_SITE"):
        monkeypatch.delenv(var, raising=False)
    return CorpusPaths(r_libraries=())


@pytest.fixture
def slurm_here(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """``srun`` and ``sbatch`` on ``PATH``: ``sbatch`` answers as Slurm does and notes the script
    it was given (in the returned file); nothing is run."""
    bin_ = tmp_path / "bin"
    bin_.mkdir()
    given = tmp_path / "sbatch-args"
    scripts = {"srun": "#!/bin/sh\nexit 1\n",
               "sbatch": f'#!/bin/sh\necho "$@" >> {given}\necho "Submitted batch job 4242"\n'}
    for name, text in scripts.items():
        (bin_ / name).write_text(text)
        (bin_ / name).chmod((bin_ / name).stat().st_mode | stat.S_IXUSR)
    monkeypatch.setenv("PATH", f"{bin_}{os.pathsep}{os.environ['PATH']}")
    return given
