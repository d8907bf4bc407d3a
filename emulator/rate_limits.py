"""Per-engine budgets of requests and tokens per minute, enforced as providers do.

Each budget is a bucket that holds at most one minute's worth and refills continuously,
so a client that keeps to the rate is never refused and one that bursts is refused
until enough has refilled; the refusal says how long that is (``Retry-After``). A request
costs one request and its prompt plus its maximum output tokens, counted when it is
admitted, as OpenAI counts them; a request larger than a whole minute's budget costs the
whole budget, so it waits for a full bucket instead of never passing.
"""

from __future__ import annotations

import math
import time
from collections.abc import Callable
from dataclasses import dataclass
from datetime import UTC, datetime

_SECONDS_PER_MINUTE = 60.0


@dataclass(frozen=True, slots=True)
class Budget:
    """One budget as its headers report it."""

    limit: int
    remaining: int
    reset_s: float
    """Seconds until the bucket is full again."""


@dataclass(frozen=True, slots=True)
class RateState:
    """The budgets after a request was admitted or refused; None where there is no limit."""

    requests: Budget | None = None
    tokens: Budget | None = None
    retry_after_s: float | None = None
    """Set when the request was refused: when it would pass."""

    @property
    def refused(self) -> bool:
        return self.retry_after_s is not None


UNLIMITED = RateState()


class _Bucket:
    __slots__ = ("_level", "_updated", "capacity", "per_second")

    def __init__(self, per_minute: int, now: float) -> None:
        self.capacity = per_minute
        self.per_second = per_minute / _SECONDS_PER_MINUTE
        self._level = float(per_minute)
        self._updated = now

    def refill(self, now: float) -> None:
        elapsed = max(0.0, now - self._updated)
        self._level = min(float(self.capacity), self._level + elapsed * self.per_second)
        self._updated = now

    def wait_s(self, cost: int) -> float:
        """How long until ``cost`` (at most the capacity) is available."""
        missing = min(cost, self.capacity) - self._level
        return max(0.0, missing / self.per_second)

    def take(self, cost: int) -> None:
        self._level -= min(cost, self.capacity)

    def budget(self) -> Budget:
        reset_s = (self.capacity - self._level) / self.per_second
        return Budget(self.capacity, max(0, math.floor(self._level)), reset_s)


class RateLimiter:
    """The engine's budgets; with neither limit set every request passes, reporting none."""

    def __init__(
        self,
        requests_per_minute: int | None,
        tokens_per_minute: int | None,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self._clock = clock
        now = clock()
        self._requests = None if requests_per_minute is None else _Bucket(requests_per_minute, now)
        self._tokens = None if tokens_per_minute is None else _Bucket(tokens_per_minute, now)
        self._buckets = [bucket for bucket in (self._requests, self._tokens) if bucket is not None]

    def admit(self, tokens: int) -> RateState:
        """Take one request and ``tokens`` from the budgets, or refuse and take nothing."""
        buckets = self._refilled()
        if not buckets:
            return UNLIMITED
        wait_s = 0.0
        if self._requests is not None:
            wait_s = self._requests.wait_s(1)
        if self._tokens is not None:
            wait_s = max(wait_s, self._tokens.wait_s(tokens))
        if wait_s > 0:
            return self._state(retry_after_s=wait_s)
        if self._requests is not None:
            self._requests.take(1)
        if self._tokens is not None:
            self._tokens.take(tokens)
        return self._state()

    def peek(self) -> RateState:
        """The budgets now, taking nothing (for answers that did not reach admission)."""
        return self._state() if self._refilled() else UNLIMITED

    def _refilled(self) -> list[_Bucket]:
        buckets = self._buckets
        if buckets:  # without limits, not even the clock is read: the benchmark hot path
            now = self._clock()
            for bucket in buckets:
                bucket.refill(now)
        return buckets

    def _state(self, retry_after_s: float | None = None) -> RateState:
        requests = None if self._requests is None else self._requests.budget()
        tokens = None if self._tokens is None else self._tokens.budget()
        return RateState(requests, tokens, retry_after_s)


def reset_time(reset_s: float) -> str:
    """The moment ``reset_s`` from now, in RFC 3339 (UTC, whole seconds, rounded up)."""
    moment = datetime.fromtimestamp(math.ceil(time.time() + reset_s), UTC)
    return moment.isoformat().replace("+00:00", "Z")


def whole_seconds(seconds: float) -> str:
    """A ``Retry-After`` value: whole seconds, rounded up, so a client that waits passes."""
    return str(math.ceil(seconds))
