"""``Experiment.in_package`` reads an experiment's config and run from its package's exports,
and refuses a folder where that is ambiguous."""

from __future__ import annotations

import importlib
import sys

import pytest

from bayesgeom.analyses.kit.experiment import Experiment
from bayesgeom.analyses.registry import experiments


def test_every_command_gets_its_folders_config_and_run():
    for e in experiments():
        package = e.run.module.rpartition(".")[0]
        assert e.run.module == f"{package}.run" and e.run.name.startswith("run_"), e.name
        assert e.config.__module__ == f"{package}.config", e.name
        assert e.config.__name__.endswith("Config"), e.name


def test_an_ambiguous_folder_must_name_them(tmp_path, monkeypatch, request):
    pkg = tmp_path / "twoconfigs"
    pkg.mkdir()
    (pkg / "__init__.py").write_text(
        "from typing import TYPE_CHECKING\n"
        "if TYPE_CHECKING:\n"
        "    from .config import AConfig, BConfig\n"
        "    from .run import run_a\n", encoding="utf-8")
    monkeypatch.syspath_prepend(str(tmp_path))
    importlib.import_module("twoconfigs")  # exports() reads an imported package's source
    request.addfinalizer(lambda: sys.modules.pop("twoconfigs", None))

    with pytest.raises(TypeError, match=r"name the config of experiment 'a'.*AConfig"):
        Experiment.in_package("twoconfigs", "a", "help")
    e = Experiment.in_package("twoconfigs", "a", "help", config="BConfig")
    assert (e._config.name, e.run.name) == ("BConfig", "run_a")
