"""``records.option``'s ``needs``: an option given while the field it needs is off is refused
(the run would ignore it), its default never is; an empty list where leaving the option out
means its default is refused too (issue 38, cause 5)."""

from __future__ import annotations

from dataclasses import dataclass

import pytest

from bayesgeom.records import check_options, option
from bayesgeom.records.options import OptionError


@dataclass
class Cfg:
    window: int = option(0, "the window (0: off)", min=0)
    tol: float = option(0.02, "its tolerance", min=0.0, needs="window")
    deep: bool = option(False, "the deep variant")
    deep_seeds: int = option(0, "its seeds", min=0, needs="deep")
    hidden: int = option(1, "an API-only option", cli=False, needs="deep")
    prompts: tuple[str, ...] | None = option(None, "prompt sets (default: mixed)")


@pytest.mark.parametrize("cfg, msg", [
    (Cfg(tol=0.1), "--tol 0.1 is ignored without --window: give --window too, or drop --tol"),
    (Cfg(deep_seeds=2), "--deep-seeds 2 is ignored without --deep"),
    (Cfg(hidden=3), "hidden 3 is ignored without --deep: give --deep too, or drop hidden"),
    (Cfg(prompts=()), "--prompts names nothing; leave it out for its default"),
])
def test_an_option_the_run_would_ignore_is_one_line(cfg, msg):
    with pytest.raises(OptionError) as e:
        check_options(cfg)
    assert str(e.value).startswith(msg), e.value


@pytest.mark.parametrize("cfg", [Cfg(), Cfg(window=3, tol=0.1), Cfg(deep=True, deep_seeds=2),
                                 Cfg(tol=0.02), Cfg(prompts=("math",))])
def test_a_default_or_an_option_whose_need_is_on_passes(cfg):
    check_options(cfg)
