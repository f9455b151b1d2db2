"""The time limit every size check uses (:mod:`records.budget`), and the user's override."""

from __future__ import annotations

import pytest

from bayesgeom.records import budget
from bayesgeom.records.errors import UsageError


def test_the_limit_is_six_hours_unless_the_user_sets_hours(monkeypatch):
    monkeypatch.delenv(budget.LIMIT_ENV, raising=False)
    assert budget.limit_s() == 6 * 3600.0
    monkeypatch.setenv(budget.LIMIT_ENV, "7.5")
    assert budget.limit_s() == 7.5 * 3600.0
    # a run the default limit refuses is allowed once the user says they will wait
    assert budget.time_refusal(2.5, 10_000, "the deep variant", "--deep-steps") is None
    monkeypatch.setenv(budget.LIMIT_ENV, "6")
    line = budget.time_refusal(2.5, 10_000, "the deep variant", "--deep-steps")
    assert line is not None and "BAYESGEOM_TIME_LIMIT_H raises it" in line
    assert "\n" not in line and line.endswith("lower --deep-steps")


@pytest.mark.parametrize("raw", ["0", "-1", "nan", "inf", "six"])
def test_a_limit_that_is_not_hours_above_zero_is_one_line(monkeypatch, raw):
    monkeypatch.setenv(budget.LIMIT_ENV, raw)
    with pytest.raises(UsageError, match=f"BAYESGEOM_TIME_LIMIT_H must be a number of hours "
                                         f"above 0, got '{raw}'"):
        budget.limit_s()
