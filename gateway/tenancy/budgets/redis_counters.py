"""Spend counters in Redis, shared by every replica: one float per key or route and window.

`{namespace}:budget:key:key_ab12:day:2026-12-04` holds what that key spent that day, in US
dollars, added to with INCRBYFLOAT and expiring an hour after its window ends (a late
flush from a slow replica still lands; nothing lingers). Every call is one pipelined round
trip; the caller bounds it and falls back to counting in-process.
"""

from __future__ import annotations

import math
from typing import TYPE_CHECKING

from gateway.config.redis import open_redis, redis_errors

if TYPE_CHECKING:
    from collections.abc import Mapping, Sequence

    from gateway.config.redis import RedisSettings
    from gateway.tenancy.budgets.windows import SpendCounter

MAX_CONNECTIONS = 16
"""Reads and flushes in flight at once per process (flushes are one at a time)."""
GRACE_S = 3600
"""A counter lives this long after its window ends."""
MAX_KEYS_PER_CALL = 1000


class RedisSpend:
    """The shared counters. Raises redis' errors, OSError or TimeoutError."""

    def __init__(self, settings: RedisSettings) -> None:
        self._client = open_redis(settings, max_connections=MAX_CONNECTIONS)
        self.errors = redis_errors()
        """What its calls raise when Redis fails: the caller\'s cue to fall back."""
        self._prefix = f"{settings.namespace}:budget:"

    def key(self, counter: SpendCounter) -> str:
        return self._prefix + counter.path

    async def add(self, amounts: Mapping[SpendCounter, float]) -> dict[SpendCounter, float]:
        """Add each amount to its counter; the counters' new totals."""
        pipe = self._client.pipeline(transaction=False)
        order = list(amounts)
        for counter in order:
            key = self.key(counter)
            pipe.incrbyfloat(key, amounts[counter])
            pipe.expireat(key, math.ceil(counter.window.ends_at) + GRACE_S)
        reply = await pipe.execute()
        return {counter: float(reply[2 * i]) for i, counter in enumerate(order)}

    async def read(self, counters: Sequence[SpendCounter]) -> dict[SpendCounter, float]:
        """Each counter's total (0 when absent), in calls of at most MAX_KEYS_PER_CALL."""
        totals: dict[SpendCounter, float] = {}
        for start in range(0, len(counters), MAX_KEYS_PER_CALL):
            part = counters[start : start + MAX_KEYS_PER_CALL]
            values = await self._client.mget([self.key(c) for c in part])
            totals.update(
                (c, float(v) if v is not None else 0.0) for c, v in zip(part, values, strict=True)
            )
        return totals

    async def close(self) -> None:
        await self._client.aclose()
