"""Spend accounting: what each key and route spent in the current day and month.

Off the request path. The telemetry thread prices each finished request (failed attempts
cost nothing) and hands a `Spend` to `record`, which only appends it to a bounded queue. A
task on the event loop drains the queue every `budgets.flush_ms` and adds the amounts to
the counters of the window in which each request finished.

Without Redis the counters are this process's, and the task sleeps until a spend is
queued (`on_queued`): an idle gateway does not wake four times a second for nothing.
With Redis they are shared: amounts go out in one pipelined INCRBYFLOAT per flush, and
admission reads a local cache of the totals that a refresh re-reads every
`budgets.refresh_ms`; only a counter missing from the cache (a key's first request here)
costs the request one bounded Redis read. When Redis fails or is slow, the last totals
read plus this process's own spend since then are used, the amounts wait to be added once
Redis answers (for `retry_redis_s` it is not asked), and the outage and the recovery are
logged once each.
"""

from __future__ import annotations

import asyncio
import logging
import time
from collections import OrderedDict, deque
from dataclasses import dataclass
from typing import TYPE_CHECKING

from gateway.tenancy.budgets.redis_counters import GRACE_S, RedisSpend
from gateway.tenancy.budgets.windows import Scope, SpendCounter, counters_of

if TYPE_CHECKING:
    from collections.abc import Callable, Iterable, Sequence

    from gateway.tenancy.config import BudgetsConfig

logger = logging.getLogger("switchyard.budgets")


@dataclass(frozen=True, slots=True)
class Spend:
    """What one finished request cost, and whose it was."""

    key_id: str | None
    team: str | None
    route: str
    cost_usd: float
    at_s: float
    """When it finished (Unix seconds): the windows it counts in."""


class SpendLedger:
    """The spend counters; see the module docstring."""

    def __init__(
        self,
        config: BudgetsConfig,
        redis: RedisSpend | None = None,
        *,
        clock: Callable[[], float] = time.time,
    ) -> None:
        self._config = config
        self._redis = redis
        self._clock = clock
        self._timeout_s = config.timeout_ms / 1000.0
        self._queue: deque[Spend] = deque()
        self._local: dict[SpendCounter, float] = {}
        """Without Redis: the totals."""
        self._shared: dict[SpendCounter, float] = {}
        """With Redis: the totals last read or written there."""
        self._pending: dict[SpendCounter, float] = {}
        """With Redis: spend not yet added there."""
        self._watched: OrderedDict[tuple[Scope, str], None] = OrderedDict()
        self._pinned: frozenset[tuple[Scope, str]] = frozenset(
            ("route", name) for name in config.routes
        )
        self._redis_down_until = 0.0
        self._redis_up: bool | None = None
        self.dropped = 0
        self.fallbacks = 0
        self._wake: Callable[[], object] | None = None
        self._woken = False
        """A spend was queued since the last drain and `_wake` was called for it."""

    @property
    def shared(self) -> bool:
        return self._redis is not None

    def on_queued(self, wake: Callable[[], object]) -> None:
        """Call `wake` (from the recording thread) for the first spend queued after each
        drain; at once if spend is already waiting."""
        self._wake = wake
        if self._queue:
            self._woken = True
            wake()

    def record(self, spend: Spend) -> None:
        """Queue a finished request's spend (any thread; never blocks)."""
        if len(self._queue) >= self._config.queue_size:
            self.dropped += 1
            return
        self._queue.append(spend)
        if not self._woken and self._wake is not None:
            # Set before the drain empties the queue, cleared before it does: a spend
            # queued meanwhile calls `wake` again (a spare wake, never a lost spend).
            self._woken = True
            self._wake()

    def record_request(
        self, key_id: str | None, team: str | None, route: str, cost_usd: float, at_s: float
    ) -> None:
        """`record` for the telemetry's spend sink."""
        self.record(Spend(key_id, team, route, cost_usd, at_s))

    async def spent(self, counters: Sequence[SpendCounter]) -> list[float]:
        """Each counter's total: from memory, or one bounded Redis read for those missing."""
        for counter in counters:
            self._watch(counter.scope, counter.name)
        if self._redis is not None:
            missing = [c for c in counters if c not in self._shared]
            if missing and self._redis_usable():
                await self._read(missing)
        return [self.total(c) for c in counters]

    async def read(self, counters: Sequence[SpendCounter]) -> dict[SpendCounter, float]:
        """Fresh totals for reports (the admin API, the CLI), not for admission: read from
        Redis (bounded), else from memory."""
        if self._redis is not None and counters and self._redis_usable():
            try:
                async with asyncio.timeout(self._timeout_s * (1 + len(counters) // 1000)):
                    totals = await self._redis.read(counters)
            except self._redis.errors as exc:
                self._redis_failed(exc)
            else:
                pending = self._pending
                return {c: total + pending.get(c, 0.0) for c, total in totals.items()}
        return {c: self.total(c) for c in counters}

    def total(self, counter: SpendCounter) -> float:
        if self._redis is None:
            return self._local.get(counter, 0.0)
        return self._shared.get(counter, 0.0) + self._pending.get(counter, 0.0)

    async def flush(self) -> list[Spend]:
        """Count the queued spend (into Redis when it answers); the spends counted."""
        spends = self._drain()
        self._prune()
        if self._redis is None or not self._pending or not self._redis_usable():
            return spends
        batch = dict(self._pending)
        try:
            async with asyncio.timeout(self._timeout_s):
                totals = await self._redis.add(batch)
        except self._redis.errors as exc:
            self._redis_failed(exc)
            return spends
        self._redis_answered()
        for counter, amount in batch.items():
            left = self._pending.pop(counter, 0.0) - amount
            if left > 0:
                self._pending[counter] = left
            self._shared[counter] = totals[counter]
        return spends

    async def refresh(self) -> None:
        """Re-read the totals of every watched key and route for the current windows."""
        if self._redis is None or not self._redis_usable():
            return
        now = self._clock()
        counters = [c for scope, name in self._watch_list() for c in counters_of(scope, name, now)]
        try:
            async with asyncio.timeout(self._timeout_s * (1 + len(counters) // 1000)):
                totals = await self._redis.read(counters)
        except self._redis.errors as exc:
            self._redis_failed(exc)
            return
        self._redis_answered()
        self._shared = totals  # one swap; windows that ended drop out

    def status(self) -> dict[str, object]:
        redis = "off" if self._redis is None else ("down" if self._redis_up is False else "up")
        return {
            "backend": self._config.backend,
            "redis": redis,
            "queued": len(self._queue),
            "dropped": self.dropped,
            "fallbacks": self.fallbacks,
            "watched": len(self._watched),
            "pending_counters": len(self._pending),
        }

    async def close(self) -> None:
        """Add what is still queued (one bounded flush), then let Redis go."""
        if self._redis is not None:
            try:
                await self.flush()
            finally:
                await self._redis.close()

    def _drain(self) -> list[Spend]:
        self._woken = False
        spends: list[Spend] = []
        totals = self._local if self._redis is None else self._pending
        while self._queue:
            spend = self._queue.popleft()
            spends.append(spend)
            for counter in _counters(spend):
                totals[counter] = totals.get(counter, 0.0) + spend.cost_usd
        return spends

    def _prune(self) -> None:
        """Forget windows that ended (with Redis: amounts too late to be added)."""
        now = self._clock()
        self._local = {c: v for c, v in self._local.items() if c.window.ends_at > now}
        late = now - GRACE_S
        self._pending = {c: v for c, v in self._pending.items() if c.window.ends_at > late}

    def _watch(self, scope: Scope, name: str) -> None:
        if (scope, name) in self._pinned:
            return
        self._watched[(scope, name)] = None
        self._watched.move_to_end((scope, name))
        while len(self._watched) > self._config.max_cached_keys:
            gone = self._watched.popitem(last=False)[0]
            self._shared = {c: v for c, v in self._shared.items() if (c.scope, c.name) != gone}

    def _watch_list(self) -> Iterable[tuple[Scope, str]]:
        return [*self._pinned, *self._watched]

    async def _read(self, counters: Sequence[SpendCounter]) -> None:
        assert self._redis is not None
        try:
            async with asyncio.timeout(self._timeout_s):
                totals = await self._redis.read(counters)
        except self._redis.errors as exc:
            self._redis_failed(exc)
            return
        self._redis_answered()
        self._shared.update(totals)

    def _redis_usable(self) -> bool:
        usable = self._clock() >= self._redis_down_until
        self.fallbacks += not usable
        return usable

    def _redis_answered(self) -> None:
        if self._redis_up is False:
            logger.warning("budgets: Redis answers again; spend is shared again")
        self._redis_up = True

    def _redis_failed(self, exc: BaseException) -> None:
        self._redis_down_until = self._clock() + self._config.retry_redis_s
        if self._redis_up is not False:
            logger.warning(
                "budgets: Redis failed (%s); spend is counted per process until it answers "
                "(tried again every %g s)",
                type(exc).__name__ if isinstance(exc, TimeoutError) else exc,
                self._config.retry_redis_s,
            )
        self._redis_up = False


def _counters(spend: Spend) -> list[SpendCounter]:
    counters = list(counters_of("route", spend.route, spend.at_s))
    if spend.key_id is not None:
        counters += counters_of("key", spend.key_id, spend.at_s)
    return counters
