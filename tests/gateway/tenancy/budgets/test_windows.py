"""UTC calendar windows of budgets: labels, ends, rollover, and the counters' names."""

from __future__ import annotations

from datetime import UTC, datetime

import pytest

from gateway.tenancy.budgets.windows import Period, counters_of, duration_text, window_of


def at(text: str) -> float:
    return datetime.fromisoformat(text).replace(tzinfo=UTC).timestamp()


@pytest.mark.parametrize(
    ("period", "instant", "label", "ends"),
    [
        ("day", "2026-12-04T15:17:00", "2026-12-04", "2026-12-05T00:00:00"),
        ("day", "2026-12-04T00:00:00", "2026-12-04", "2026-12-05T00:00:00"),
        ("day", "2026-12-04T23:59:59.999", "2026-12-04", "2026-12-05T00:00:00"),
        ("day", "2026-12-31T23:00:00", "2026-12-31", "2027-01-01T00:00:00"),
        ("month", "2026-12-04T15:17:00", "2026-12", "2027-01-01T00:00:00"),
        ("month", "2028-02-29T12:00:00", "2028-02", "2028-03-01T00:00:00"),
        ("month", "2026-01-31T23:59:59", "2026-01", "2026-02-01T00:00:00"),
    ],
)
def test_windows_are_utc_calendar_days_and_months(
    period: Period, instant: str, label: str, ends: str
) -> None:
    window = window_of(period, at(instant))
    assert (window.label, window.ends_at) == (label, at(ends))
    assert window.resets == ends + "Z"


def test_the_next_instant_after_a_window_is_a_new_window() -> None:
    day = window_of("day", at("2026-12-04T23:59:59"))
    assert window_of("day", day.ends_at).label == "2026-12-05"
    assert day.seconds_left(at("2026-12-04T23:59:59")) == 1.0
    assert day.seconds_left(day.ends_at + 5) == 0.0


def test_counters_name_their_scope_and_window() -> None:
    day, month = counters_of("key", "key_ab12", at("2026-12-04T10:00:00"))
    assert day.path == "key:key_ab12:day:2026-12-04"
    assert month.path == "key:key_ab12:month:2026-12"


@pytest.mark.parametrize(
    ("seconds", "text"),
    [
        (0, "0s"),
        (0.2, "1s"),
        (45, "45s"),
        (61, "1m1s"),
        (8 * 3600 + 12 * 60, "8h12m"),
        (3 * 86400 + 4 * 3600, "3d4h"),
    ],
)
def test_waits_read_as_words(seconds: float, text: str) -> None:
    assert duration_text(seconds) == text
