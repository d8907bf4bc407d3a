"""Periodic loops wake on a shared beat of the event loop's clock."""

from __future__ import annotations

import pytest

from gateway.process.tasks import beat_delay


@pytest.mark.parametrize(
    ("now", "period", "delay"),
    [
        (100.0, 1.0, 1.0),  # on a beat: the next one
        (100.25, 1.0, 0.75),
        (100.99, 1.0, 1.01),  # too close to the next beat: the one after
        (103.0, 10.0, 7.0),
        (7.5, 2.5, 2.5),
    ],
)
def test_the_delay_reaches_the_next_whole_multiple_of_the_period(
    now: float, period: float, delay: float
) -> None:
    assert beat_delay(now, period) == pytest.approx(delay)


def test_loops_of_one_period_woken_at_different_phases_meet_on_the_same_beat() -> None:
    phases = [100.1, 100.37, 100.5, 100.93]
    assert {round(now + beat_delay(now, 1.0), 9) for now in phases} == {101.0}
