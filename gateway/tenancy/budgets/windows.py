"""Budget windows: calendar days and months in UTC, and the spend counters kept per window.

A day runs from 00:00:00 UTC to the next midnight; a month from the first day's midnight
to the next month's. A counter's name carries its window (`day:2026-12-04`,
`month:2026-12`), so a new window starts at zero without anything being reset.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from typing import Literal

Period = Literal["day", "month"]
Scope = Literal["key", "route"]
PERIODS: tuple[Period, ...] = ("day", "month")


@dataclass(frozen=True, slots=True)
class Window:
    """One calendar window."""

    period: Period
    label: str
    """`2026-12-04` for a day, `2026-12` for a month."""
    ends_at: float
    """Unix seconds at which the next window starts."""

    def seconds_left(self, now_s: float) -> float:
        return max(0.0, self.ends_at - now_s)

    @property
    def resets(self) -> str:
        """The end of the window, RFC 3339 in UTC: `2026-12-05T00:00:00Z`."""
        return datetime.fromtimestamp(self.ends_at, UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


def window_of(period: Period, at_s: float) -> Window:
    """The `period` window that holds the instant `at_s` (Unix seconds)."""
    at = datetime.fromtimestamp(at_s, UTC)
    if period == "day":
        start = at.replace(hour=0, minute=0, second=0, microsecond=0)
        return Window("day", start.strftime("%Y-%m-%d"), (start + timedelta(days=1)).timestamp())
    start = at.replace(day=1, hour=0, minute=0, second=0, microsecond=0)
    following = (start + timedelta(days=32)).replace(day=1)
    return Window("month", start.strftime("%Y-%m"), following.timestamp())


@dataclass(frozen=True, slots=True)
class SpendCounter:
    """The spend of one key or route in one window."""

    scope: Scope
    name: str
    """The key's id, or the route's name."""
    window: Window

    @property
    def path(self) -> str:
        """Its name under the namespace: `key:key_ab12:day:2026-12-04`."""
        return f"{self.scope}:{self.name}:{self.window.period}:{self.window.label}"


def counters_of(scope: Scope, name: str, at_s: float) -> tuple[SpendCounter, SpendCounter]:
    """The day's and the month's counters of `name` at `at_s`."""
    return (
        SpendCounter(scope, name, window_of("day", at_s)),
        SpendCounter(scope, name, window_of("month", at_s)),
    )


def duration_text(seconds: float) -> str:
    """A wait in words: `8h12m`, `3d4h`, `45s`."""
    whole = max(0, int(seconds + 0.999))
    days, rest = divmod(whole, 86_400)
    hours, rest = divmod(rest, 3600)
    minutes, secs = divmod(rest, 60)
    if days:
        return f"{days}d{hours}h"
    if hours:
        return f"{hours}h{minutes}m"
    return f"{minutes}m{secs}s" if minutes else f"{secs}s"
