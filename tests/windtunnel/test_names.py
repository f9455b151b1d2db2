"""The light names the command line checks (:mod:`windtunnel.names`,
:mod:`windtunnel.task_configs`) are the registries' own (the arch names are their registry:
:data:`windtunnel.arch_registry.ARCH_NAMES`)."""

from __future__ import annotations

from bayesgeom.windtunnel import TASKS, TokenTask
from bayesgeom.windtunnel.names import PRESET_NAMES, TASK_NAMES, TEXT_TASK_NAMES, TOKEN_TASK_NAMES
from bayesgeom.windtunnel.task_configs import TASK_CONFIGS
from bayesgeom.windtunnel.transformer import TRANSFORMER_PRESETS


def test_the_light_names_are_the_registries() -> None:
    assert tuple(TRANSFORMER_PRESETS) == PRESET_NAMES
    assert sorted(TASKS) == sorted(TASK_NAMES)
    token = sorted(n for n, r in TASKS.items() if issubclass(r.cls, TokenTask))
    assert tuple(token) == TOKEN_TASK_NAMES
    assert tuple(sorted(set(TASKS) - set(token))) == TEXT_TASK_NAMES
    assert {n: TASKS[n].config_cls for n in TASK_NAMES} == {n: TASK_CONFIGS[n] for n in TASK_NAMES}
