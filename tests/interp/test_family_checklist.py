"""docs/development.md's "Adding a model family", the steps most often forgotten: the adapter in
``interp.families.FAMILIES`` (else no model ever gets it), its acceptance checks on a tiny
random model (listed below, so a new family fails here until it has them), and its name on the
interp page."""

from __future__ import annotations

import dataclasses
import importlib
import pkgutil
from pathlib import Path

from bayesgeom.interp import families
from bayesgeom.interp.families import FAMILIES
from bayesgeom.interp.families.adapter import FamilyAdapter

ROOT = Path(__file__).resolve().parents[2]

#: family -> the test module whose checks load a tiny random model of it (sites against the
#: weights, padding, interventions that leave the model unchanged)
ACCEPTANCE = {"gpt_neox": "test_families.py", "phi": "test_families.py",
              "llama": "test_families.py", "mistral": "test_families.py",
              "gpt2": "test_families.py", "mamba": "test_recurrent_families.py",
              "mamba2": "test_recurrent_families.py", "lstm": "test_recurrent_families.py"}


def defined_adapters() -> dict[str, FamilyAdapter]:
    """Every adapter a module of ``interp/families/`` defines at its top level."""
    out = {}
    for info in pkgutil.iter_modules(families.__path__):
        module = importlib.import_module(f"{families.__name__}.{info.name}")
        out |= {f"{info.name}.{k}": v for k, v in vars(module).items()
                if isinstance(v, FamilyAdapter)}
    return out


def unregistered(adapters: dict[str, FamilyAdapter]) -> list[str]:
    return sorted(k for k, v in adapters.items() if not any(v is f for f in FAMILIES))


def test_every_defined_adapter_is_registered() -> None:
    adapters = defined_adapters()
    assert "phi.PHI" in adapters and "recurrent.MAMBA2" in adapters
    assert not unregistered(adapters), "add these to FAMILIES in interp/families/__init__.py"


def test_the_registration_check_can_fail() -> None:
    extra = dataclasses.replace(FAMILIES[0], name="new_family")
    assert unregistered({"new.NEW": extra, "phi.PHI": FAMILIES[1]}) == ["new.NEW"]


def test_every_family_has_acceptance_checks() -> None:
    assert {f.name for f in FAMILIES} == set(ACCEPTANCE), (
        "a family without acceptance checks on a tiny random model (or a stale entry)")
    for name, module in ACCEPTANCE.items():
        text = (ROOT / "tests" / "interp" / module).read_text(encoding="utf-8")
        conftest = (ROOT / "tests" / "interp" / "conftest.py").read_text(encoding="utf-8")
        assert f'"{name}"' in text + conftest, f"{module} never builds a {name} model"


def test_every_family_is_on_the_interp_page() -> None:
    page = (ROOT / "docs" / "interp.md").read_text(encoding="utf-8")
    missing = [f.name for f in FAMILIES if f"`{f.name}`" not in page]
    assert not missing, f"docs/interp.md does not name {missing}"
