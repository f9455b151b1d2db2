"""Every module is reachable from ``import bayesgeom as bg`` by attributes alone (the notebooks'
dialect: ``bg.analyses.steer.report.dose_response``), each imported when first asked for, and a
name that is neither an export nor a submodule is still an ``AttributeError``."""

from __future__ import annotations

import subprocess
import sys

import pytest

import bayesgeom as bg


def fresh(code: str) -> str:
    """stdout of ``code`` in a new interpreter (nothing imported beforehand)."""
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                          timeout=300)
    assert done.returncode == 0, done.stderr[-2000:]
    return done.stdout.strip()


def test_submodules_are_attributes_from_a_fresh_start() -> None:
    out = fresh("import bayesgeom as bg\n"
                "print(bg.interp.attention_taps.attention_gradients.__module__)\n"
                "print(bg.analyses.steer.report.format_summary.__module__)\n"
                "print(bg.analyses.prompts.pool.PoolConfig.__module__)\n"
                "print(bg.windtunnel.prior_readout.read_priors.__module__)\n")
    assert out.split() == ["bayesgeom.interp.attention_taps", "bayesgeom.analyses.steer.report",
                           "bayesgeom.analyses.prompts.pool",
                           "bayesgeom.windtunnel.prior_readout"]


def test_asking_for_a_package_imports_nothing_heavy() -> None:
    out = fresh("import sys, bayesgeom as bg\nbg.analyses.steer; bg.analyses.prompts; bg.probes\n"
                "print([m for m in ('torch', 'transformers', 'pandas') if m in sys.modules])")
    assert out == "[]"


@pytest.mark.parametrize("package", [bg.interp, bg.probes, bg.analyses, bg.analyses.prompts,
                                     bg.analyses.steer])
def test_an_unknown_name_is_an_attribute_error(package) -> None:
    with pytest.raises(AttributeError, match="no attribute 'no_such_thing'"):
        package.no_such_thing  # noqa: B018
    assert not hasattr(package, "__wrapped__")  # dunder probes (inspect, doctest) import nothing
