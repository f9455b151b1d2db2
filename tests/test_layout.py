"""The source tree is the import tree: ``bayesgeom/`` holds one link per subpackage onto the
repository's top-level folder of the same name (the design card's ``interp/ probes/
windtunnel/ analyses/``, with ``records/`` and ``infotheory/`` beside them), the modules Python
imports are those files, and an editor's completion (jedi, as IPython uses it) resolves a
dotted name through an editable install to its file."""

from __future__ import annotations

import importlib
import os
import sys
from pathlib import Path

import jedi

import bayesgeom
from bayesgeom import SUBPACKAGES

ROOT = Path(__file__).resolve().parent.parent


def test_bayesgeom_links_every_subpackage_to_its_top_level_folder():
    pkg = ROOT / "bayesgeom"
    links = {p.name for p in pkg.iterdir() if p.is_symlink()}
    assert links == set(SUBPACKAGES)
    for name in SUBPACKAGES:
        assert os.readlink(pkg / name) == f"../{name}"  # relative: any clone, any place
        assert (ROOT / name / "__init__.py").is_file()
    assert {p.name for p in pkg.iterdir() if not p.is_symlink()} <= {
        "__init__.py", "__main__.py", "__pycache__", "py.typed"}


def test_imported_modules_are_the_repository_files():
    assert Path(bayesgeom.__file__).resolve() == ROOT / "bayesgeom" / "__init__.py"
    for name in SUBPACKAGES:
        module = importlib.import_module(f"bayesgeom.{name}")
        assert Path(module.__file__).resolve() == ROOT / name / "__init__.py"


def test_jedi_resolves_a_dotted_name_to_its_file():
    env = jedi.create_environment(sys.executable, safe=False)
    src = "from bayesgeom.interp.sites import site_name\nsite_name"
    script = jedi.Script(src, path=ROOT / "scratch.py", environment=env)
    (hit,) = script.goto(2, 3, follow_imports=True)
    assert Path(hit.module_path).resolve() == ROOT / "interp" / "sites.py"
    assert hit.type == "function" and hit.name == "site_name"
    (mod,) = jedi.Script("import bayesgeom.probes.key_frame", path=ROOT / "scratch.py",
                         environment=env).goto(1, 30, follow_imports=True)
    assert Path(mod.module_path).resolve() == ROOT / "probes" / "key_frame.py"
