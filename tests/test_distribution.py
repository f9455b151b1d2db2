"""The built distribution: a (non-editable) wheel of the repository installs exactly one import
name, ``bayesgeom``, with every module of its subpackages, and it lives beside PyPI's
``records``, ``probes`` and ``infotheory`` in a fresh virtual environment without shadowing them.

The wheel is built from a copy of the source tree (so no ``build/`` or ``*.egg-info`` lands in
the checkout). The fresh venv sees the project's runtime dependencies (torch ...) through a
``.pth`` line naming the dev venv's site-packages, appended after its own site-packages, so
nothing heavy is downloaded; its own ``bayesgeom`` (the wheel) and ``records`` win.

PyPI's ``probes`` (0.1.0, its only release) cannot be installed by any pip since 10 (its
``setup.py`` imports ``pip.req``) nor imported on Python 3 (``from server import Server``), so a
local stand-in distribution named ``probes`` (top-level package ``probes``) takes its place:
what matters here is that an installed top-level ``probes`` is the one ``import probes`` finds.
"""

from __future__ import annotations

import ast
import json
import os
import re
import shutil
import subprocess
import sys
import sysconfig
import zipfile
from pathlib import Path

import pytest

pytestmark = pytest.mark.slow

ROOT = Path(__file__).resolve().parent.parent
PIP_TIMEOUT = 600  # records pulls SQLAlchemy, tablib, openpyxl, docopt
BUILD_TIMEOUT = 600
RUN_TIMEOUT = 300
# pip's words when the index cannot be reached (the only reason to skip)
OFFLINE = re.compile(
    r"NewConnectionError|Failed to establish a new connection|Temporary failure in name "
    r"resolution|Name or service not known|nodename nor servname|Could not resolve host|"
    r"Network is unreachable|Connection refused|ConnectTimeout|ConnectionError|ProxyError|"
    r"Max retries exceeded|No route to host",
    re.IGNORECASE,
)
COPY_IGNORE = shutil.ignore_patterns(
    ".git", ".venv", "venv", "build", "dist", "*.egg-info", "__pycache__", "*.pyc", "runs",
    ".pytest_cache", ".ruff_cache",
)


def _env(venv: Path | None = None) -> dict[str, str]:
    """The environment for a subprocess: no PYTHONPATH (the repository folders must not be
    importable), offline Hugging Face hub, the fresh venv (when given) first on PATH."""
    drop = {"PYTHONPATH", "PYTHONHOME", "PYTHONSTARTUP", "PYTHONSAFEPATH", "VIRTUAL_ENV",
            "__PYVENV_LAUNCHER__"}
    env = {k: v for k, v in os.environ.items() if k not in drop}
    env["HF_HUB_OFFLINE"] = "1"
    env["PYTHONNOUSERSITE"] = "1"
    if venv is not None:
        env["VIRTUAL_ENV"] = str(venv)
        env["PATH"] = f"{venv / 'bin'}{os.pathsep}{env.get('PATH', '')}"
    return env


def _run(cmd: list[str | Path], cwd: Path, timeout: int, venv: Path | None = None):
    return subprocess.run([str(c) for c in cmd], cwd=cwd, env=_env(venv), capture_output=True,
                          text=True, timeout=timeout, check=False)


def _tail(proc: subprocess.CompletedProcess, n: int = 4000) -> str:
    return f"exit {proc.returncode}\n--- stdout ---\n{proc.stdout[-n:]}\n--- stderr ---\n" \
           f"{proc.stderr[-n:]}"


def _pip_wheel(project: Path, out: Path, cwd: Path) -> Path:
    """Build ``project``'s wheel into ``out`` with the running interpreter (its setuptools, no
    build isolation: nothing to download); return the wheel's path."""
    proc = _run([sys.executable, "-m", "pip", "wheel", "--no-deps", "--no-build-isolation",
                 "-w", out, project], cwd=cwd, timeout=BUILD_TIMEOUT)
    assert proc.returncode == 0, f"`pip wheel` of {project} failed:\n{_tail(proc)}"
    wheels = sorted(out.glob("*.whl"))
    assert len(wheels) == 1, f"expected one wheel from {project} in {out}, got {wheels}"
    return wheels[0]


@pytest.fixture(scope="module")
def built(tmp_path_factory) -> tuple[Path, Path]:
    """(the bayesgeom wheel, the source copy it was built from)."""
    tmp = tmp_path_factory.mktemp("distribution")
    src = tmp / "src"
    shutil.copytree(ROOT, src, ignore=COPY_IGNORE, symlinks=True)
    return _pip_wheel(src, tmp / "wheel", cwd=tmp), src


def _wheel_names(wheel: Path) -> list[str]:
    """Every path the wheel installs, from its RECORD."""
    with zipfile.ZipFile(wheel) as zf:
        records = [n for n in zf.namelist() if re.fullmatch(r"[^/]+\.dist-info/RECORD", n)]
        assert len(records) == 1, f"{wheel.name}: expected one *.dist-info/RECORD, got {records}"
        rows = zf.read(records[0]).decode().splitlines()
    return [row.split(",")[0] for row in rows if row.strip()]


def test_wheel_has_one_top_level_name(built):
    wheel, src = built
    names = _wheel_names(wheel)
    top = {n.split("/")[0].removesuffix(".py") for n in names
           if not n.split("/")[0].endswith((".dist-info", ".data"))}
    assert top == {"bayesgeom"}, (
        f"{wheel.name} installs top-level names {sorted(top)}, expected exactly ['bayesgeom']")

    # every module of the façade and of its subpackages (the top-level folders) is in the wheel
    init = ast.parse((src / "bayesgeom" / "__init__.py").read_text())
    subpackages = next(ast.literal_eval(node.value) for node in init.body
                       if isinstance(node, ast.Assign)
                       and any(getattr(t, "id", None) == "SUBPACKAGES" for t in node.targets))
    expected = {f"bayesgeom/{p.relative_to(src / 'bayesgeom').as_posix()}"
                for p in (src / "bayesgeom").glob("*.py")}
    for folder in subpackages:
        expected |= {f"bayesgeom/{p.relative_to(src).as_posix()}"
                     for p in (src / folder).rglob("*.py") if "__pycache__" not in p.parts}
    missing = sorted(expected - set(names))
    assert not missing, f"{wheel.name} lacks {len(missing)} source modules: {missing}"
    shipped = {n.split("/")[1] for n in names if n.startswith("bayesgeom/") and n.count("/") > 1}
    assert shipped == set(subpackages), (
        f"subpackage folders in the wheel {sorted(shipped)} != bayesgeom.SUBPACKAGES "
        f"{sorted(subpackages)}")

    with zipfile.ZipFile(wheel) as zf:
        entry = next(n for n in zf.namelist() if n.endswith(".dist-info/entry_points.txt"))
        entry_points = zf.read(entry).decode()
    assert re.search(r"^bayesgeom\s*=\s*bayesgeom\.analyses\.cli:main\s*$", entry_points,
                     re.MULTILINE), f"no `bayesgeom` console script in {entry}:\n{entry_points}"


STANDIN_PYPROJECT = """\
[build-system]
requires = ["setuptools"]
build-backend = "setuptools.build_meta"

[project]
name = "probes"
version = "0.1.0"
description = "stand-in for PyPI's uninstallable probes 0.1.0 (tests/test_distribution.py)"

[tool.setuptools]
packages = ["probes"]
"""

# run by the fresh venv's python: PyPI's names first, then bayesgeom's; prints one JSON line
PROBE = r"""
import importlib, json, sys
out = {"sys_path": sys.path, "modules": {}}
def load(name):
    try:
        mod = importlib.import_module(name)
        out["modules"][name] = {"file": getattr(mod, "__file__", None)}
    except BaseException as exc:
        out["modules"][name] = {"error": f"{type(exc).__name__}: {exc}"}
for name in ("records", "probes", "infotheory"):
    load(name)
try:
    import records
    out["records.Database"] = repr(records.Database)
except BaseException as exc:
    out["records.Database"] = f"error {type(exc).__name__}: {exc}"
for name in ("bayesgeom", "bayesgeom.records", "bayesgeom.infotheory", "bayesgeom.interp",
             "bayesgeom.probes", "bayesgeom.windtunnel", "bayesgeom.analyses",
             "bayesgeom.analyses.cli"):
    load(name)
out["after"] = {n: getattr(sys.modules.get(n), "__file__", None)
                for n in ("records", "probes", "infotheory")}
out["bare"] = sorted(n for n in sys.modules
                     if n.split(".")[0] in {"interp", "windtunnel", "analyses"})
out["editable_finder"] = sorted(n for n in sys.modules if "__editable__" in n)
print("@@PROBE@@" + json.dumps(out))
"""


@pytest.fixture(scope="module")
def fresh_venv(built, tmp_path_factory) -> tuple[Path, Path, Path]:
    """(the fresh venv, its site-packages, an empty working directory)."""
    wheel, _ = built
    tmp = tmp_path_factory.mktemp("fresh")
    work = tmp / "work"
    work.mkdir()
    venv = tmp / "venv"
    proc = _run([sys.executable, "-m", "venv", venv], cwd=work, timeout=RUN_TIMEOUT)
    assert proc.returncode == 0, f"`python -m venv` failed:\n{_tail(proc)}"
    py = venv / "bin" / "python"

    pip = [py, "-m", "pip", "install", "--disable-pip-version-check", "--retries", "2"]
    proc = _run([*pip, "records==0.6.0", "infotheory"], cwd=work, timeout=PIP_TIMEOUT, venv=venv)
    if proc.returncode != 0 and OFFLINE.search(proc.stdout + proc.stderr):
        pytest.skip(f"PyPI unreachable (pip could not connect):\n{_tail(proc, 1500)}")
    assert proc.returncode == 0, f"pip install of PyPI's records, infotheory failed:\n" \
                                 f"{_tail(proc)}"

    standin = tmp / "standin"
    (standin / "probes").mkdir(parents=True)
    (standin / "pyproject.toml").write_text(STANDIN_PYPROJECT)
    (standin / "probes" / "__init__.py").write_text('"""Stand-in for PyPI\'s probes."""\n')
    probes_wheel = _pip_wheel(standin, tmp / "standin-wheel", cwd=work)

    proc = _run([*pip, "--no-deps", probes_wheel, wheel], cwd=work, timeout=PIP_TIMEOUT,
                venv=venv)
    assert proc.returncode == 0, f"pip install --no-deps of {wheel.name} failed:\n{_tail(proc)}"

    proc = _run([py, "-c", "import sysconfig; print(sysconfig.get_paths()['purelib'])"],
                cwd=work, timeout=RUN_TIMEOUT, venv=venv)
    assert proc.returncode == 0, _tail(proc)
    site = Path(proc.stdout.strip())
    dev_site = sysconfig.get_paths()["purelib"]
    # a plain path line: appended to sys.path after the venv's own site-packages, and the
    # .pth files in it (the dev venv's editable finder) are not processed
    (site / "zz_bayesgeom_dev_site.pth").write_text(dev_site + "\n")
    return venv, site, work


def test_fresh_venv_imports_pypi_names_and_bayesgeom(fresh_venv):
    venv, site, work = fresh_venv
    proc = _run([venv / "bin" / "python", "-c", PROBE], cwd=work, timeout=RUN_TIMEOUT, venv=venv)
    lines = [ln for ln in proc.stdout.splitlines() if ln.startswith("@@PROBE@@")]
    assert proc.returncode == 0 and lines, f"the import probe did not finish:\n{_tail(proc)}"
    out = json.loads(lines[-1].removeprefix("@@PROBE@@"))
    mods = out["modules"]

    def inside(file: str | None, folder: Path) -> bool:
        return file is not None and Path(file).resolve().is_relative_to(folder.resolve())

    sys_path = [str(Path(p).resolve()) for p in out["sys_path"] if p]
    dev_site = str(Path(sysconfig.get_paths()["purelib"]).resolve())
    assert str(site.resolve()) in sys_path and dev_site in sys_path, (
        f"sys.path lacks the fresh ({site}) or the dev ({dev_site}) site-packages: {sys_path}")
    assert sys_path.index(str(site.resolve())) < sys_path.index(dev_site), (
        f"the dev venv's site-packages precedes the fresh venv's: {sys_path}")
    assert not out["editable_finder"], (
        f"the dev venv's editable finder was loaded in the fresh venv: {out['editable_finder']}")

    for name in ("records", "probes", "infotheory"):
        info = mods[name]
        assert "error" not in info, f"`import {name}` failed in the fresh venv: {info['error']}"
        where = Path(info["file"] or "").resolve()
        assert inside(info["file"], site) and where.relative_to(site.resolve()).parts[0] in {
            name, f"{name}.py"}, f"`import {name}` found {where}, not PyPI's {name} in {site}"
        assert out["after"][name] == info["file"], (
            f"after importing bayesgeom, sys.modules[{name!r}] is {out['after'][name]}, "
            f"was {info['file']}")
    assert out["records.Database"].startswith("<class 'records.Database'"), (
        f"records.Database is not PyPI records' class: {out['records.Database']}")

    for name in ("bayesgeom", "bayesgeom.records", "bayesgeom.infotheory", "bayesgeom.interp",
                 "bayesgeom.probes", "bayesgeom.windtunnel", "bayesgeom.analyses",
                 "bayesgeom.analyses.cli"):
        info = mods[name]
        assert "error" not in info, f"`import {name}` failed in the fresh venv: {info['error']}"
        assert inside(info["file"], site / "bayesgeom"), (
            f"`import {name}` found {info['file']}, not the wheel's install in "
            f"{site / 'bayesgeom'} (an editable install or the checkout leaked in)")
        assert not inside(info["file"], ROOT), f"{name} was imported from the checkout"
    assert not out["bare"], (
        f"bayesgeom imported repository folders by their bare names: {out['bare']}")


@pytest.mark.parametrize("how", ["script", "module"])
def test_fresh_venv_cli_help(fresh_venv, how):
    venv, _, work = fresh_venv
    cmd = [venv / "bin" / "bayesgeom"] if how == "script" else \
        [venv / "bin" / "python", "-m", "bayesgeom"]
    proc = _run([*cmd, "--help"], cwd=work, timeout=RUN_TIMEOUT, venv=venv)
    assert proc.returncode == 0, f"`{' '.join(map(str, cmd))} --help` failed:\n{_tail(proc)}"
    assert "usage: bayesgeom" in proc.stdout, (
        f"`{' '.join(map(str, cmd))} --help` printed no 'usage: bayesgeom':\n{_tail(proc)}")
