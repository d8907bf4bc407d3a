"""The log budget: a burst of lines, then one per interval, each saying how many were held."""

from __future__ import annotations

import pytest

from gateway.telemetry.log_budget import LogBudget


class _Clock:
    def __init__(self) -> None:
        self.now = 0.0

    def __call__(self) -> float:
        return self.now


def test_a_burst_then_one_line_per_interval_each_saying_how_many_were_held() -> None:
    clock = _Clock()
    budget = LogBudget(burst=3, every_s=10.0, clock=clock)
    assert [budget.take() for _ in range(5)] == [0, 0, 0, None, None]
    clock.now = 9.0
    assert budget.take() is None
    clock.now = 10.0
    assert budget.take() == 3  # the three held back since the last line
    assert budget.take() is None


def test_a_flood_logs_a_bounded_number_of_lines() -> None:
    clock = _Clock()
    budget = LogBudget(burst=10, every_s=10.0, clock=clock)
    logged = 0
    for i in range(100_000):  # 1,000 events a second for 100 s
        clock.now = i / 1000
        logged += budget.take() is not None
    assert logged <= 10 + 100 / 10 + 1


def test_a_quiet_spell_refills_the_burst_and_no_more() -> None:
    clock = _Clock()
    budget = LogBudget(burst=2, every_s=1.0, clock=clock)
    assert [budget.take() for _ in range(3)] == [0, 0, None]
    clock.now = 1000.0
    assert [budget.take() for _ in range(3)] == [1, 0, None]


@pytest.mark.parametrize(("burst", "every_s"), [(0, 1.0), (1, 0.0)])
def test_a_budget_that_could_never_log_is_refused(burst: int, every_s: float) -> None:
    with pytest.raises(ValueError):
        LogBudget(burst, every_s)
