"""A budget of log lines for events a client can cause at will (a flood of slow
connections): a few lines at once, then one per interval; what was held back is counted
and the next line says how many, so the log stays small and still tells the whole story.
"""

from __future__ import annotations

import time
from collections.abc import Callable

from gateway.tenancy.buckets import refill


class LogBudget:
    """A token bucket of lines: `burst` at once, one more every `every_s`."""

    __slots__ = ("_burst", "_clock", "_every_s", "_held", "_tokens", "_updated")

    def __init__(
        self, burst: int, every_s: float, clock: Callable[[], float] = time.monotonic
    ) -> None:
        if burst < 1 or every_s <= 0:
            raise ValueError("a log budget needs burst >= 1 and every_s > 0")
        self._burst = burst
        self._every_s = every_s
        self._clock = clock
        self._tokens = float(burst)
        self._updated = clock()
        self._held = 0

    def take(self) -> int | None:
        """None: hold this line back (counted). Else log it, saying how many lines were
        held back since the last one logged (usually 0)."""
        now = self._clock()
        self._tokens = refill(self._tokens, self._burst, 1.0 / self._every_s, now - self._updated)
        self._updated = now
        if self._tokens < 1.0:
            self._held += 1
            return None
        self._tokens -= 1.0
        held, self._held = self._held, 0
        return held
