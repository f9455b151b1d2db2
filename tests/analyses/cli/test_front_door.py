"""The front door of the command line (issue 25): ``--version``, ``--help``, a parser built
without the heavy libraries, and negated flags whose help reads naturally. Start-up times are
measured by ``benchmarks/cli_startup.py``, not asserted here."""

from __future__ import annotations

import subprocess
import sys
from importlib.metadata import version

import pytest

from bayesgeom.analyses.cli import build_parser, main
from bayesgeom.analyses.kit.options import negated_help

HEAVY = ("torch", "transformers", "pandas", "plotly", "scipy", "sklearn")


def test_version_prints_the_package_version(capsys):
    with pytest.raises(SystemExit) as e:
        main(["--version"])
    assert e.value.code == 0
    assert capsys.readouterr().out.strip() == f"bayesgeom {version('bayesgeom')}"


def test_help_lists_the_commands(capsys):
    with pytest.raises(SystemExit) as e:
        main(["--help"])
    out = capsys.readouterr().out
    assert e.value.code == 0 and "--version" in out
    for cmd in ("windtunnel", "capture", "geometry", "steer", "dynamics", "stability"):
        assert cmd in out


def test_an_unknown_command_is_one_line(capsys):
    assert main(["nosuchcmd"]) == 2
    err = capsys.readouterr().err
    assert err.startswith("bayesgeom: error:") and err.count("\n") == 1


def test_building_the_parser_imports_no_heavy_library():
    code = ("import sys; from bayesgeom.analyses.cli import build_parser; build_parser(); "
            f"print([m for m in {HEAVY!r} if m in sys.modules])")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                         check=True).stdout
    assert out.strip() == "[]"


def test_a_command_help_has_its_options_and_natural_negations(capsys):
    with pytest.raises(SystemExit):
        main(["geometry", "--help"])
    out = " ".join(capsys.readouterr().out.split())
    assert "--no-init-baseline skip the same analysis" in out and "--prompts" in out
    assert "do not:" not in out
    sub = next(a for a in build_parser()._actions if a.dest == "cmd").choices["steer"]
    helps = {a.option_strings[0]: a.help for a in sub._actions if a.option_strings}
    assert helps["--no-norm-frozen"].startswith("skip the norm-frozen effect")
    assert helps["--no-keep-only"] == "skip the keep-only condition"


def test_negated_help():
    assert negated_help("show progress bars") == "do not show progress bars"
    assert negated_help("the keep-only condition") == "skip the keep-only condition"
