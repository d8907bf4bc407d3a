"""Spend limits per client key and per route, checked before a request is dispatched.

A key's budget is on the key (`budget_usd_per_day`, `budget_usd_per_month`); a route's
is in `budgets.routes`. Windows are UTC calendar days and months (`windows`). A
request is admitted while every budget that applies has spent less than its limit; what
it then costs is counted after it finished (`ledger`), so the request that crosses
a limit completes and the next one is refused (429 `insufficient_quota`) or, with
`on_exhausted: fallback`, sent to a fallback route whose own budget is not spent.
Answers carry the tightest budget's `x-switchyard-budget-*` headers.
"""

from __future__ import annotations

import asyncio
import logging
import math
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from gateway.errors import BudgetExhausted
from gateway.tenancy.budgets.windows import (
    PERIODS,
    Period,
    Scope,
    SpendCounter,
    Window,
    duration_text,
    window_of,
)

if TYPE_CHECKING:
    from collections.abc import Awaitable, Callable, Sequence

    from gateway.tenancy.budgets.ledger import SpendLedger
    from gateway.tenancy.budgets.metrics import BudgetMetrics
    from gateway.tenancy.caller import Caller
    from gateway.tenancy.config import BudgetsConfig, OnExhausted

logger = logging.getLogger("switchyard.budgets")

LIMIT_HEADER = "x-switchyard-budget-limit-usd"
REMAINING_HEADER = "x-switchyard-budget-remaining-usd"
RESET_HEADER = "x-switchyard-budget-reset"
SCOPE_HEADER = "x-switchyard-budget-scope"
REROUTED_HEADER = "x-switchyard-budget-rerouted-from"


KeyBudget = tuple[str, float | None, float | None]
"""A key's id and its day and month limits."""


@dataclass(frozen=True, slots=True)
class Limit:
    """One budget that applies to a request."""

    scope: Scope
    name: str
    period: Period
    usd: float
    on_exhausted: OnExhausted
    fallback_route: str | None


@dataclass(frozen=True, slots=True)
class Standing:
    """A budget and what its window has spent so far."""

    limit: Limit
    window: Window
    spent_usd: float

    @property
    def remaining_usd(self) -> float:
        return max(0.0, self.limit.usd - self.spent_usd)

    @property
    def exhausted(self) -> bool:
        return self.spent_usd >= self.limit.usd


@dataclass(frozen=True, slots=True)
class BudgetCheck:
    """Every budget a request on `route` is held to, as it stands now."""

    route: str
    standings: tuple[Standing, ...]
    now_s: float

    @property
    def exhausted(self) -> tuple[Standing, ...]:
        return tuple(s for s in self.standings if s.exhausted)

    def headers(self) -> dict[str, str]:
        """The tightest budget's (the least left; the earliest reset among equals)."""
        if not self.standings:
            return {}
        tightest = min(self.standings, key=lambda s: (s.remaining_usd, s.window.ends_at))
        return {
            LIMIT_HEADER: _usd(tightest.limit.usd),
            REMAINING_HEADER: _usd(tightest.remaining_usd),
            RESET_HEADER: tightest.window.resets,
            SCOPE_HEADER: f"{tightest.limit.scope} {tightest.limit.period}",
        }

    def refusal(self) -> BudgetExhausted:
        """The 429 for the spent budget whose window ends last (waiting less helps none)."""
        spent = max(self.exhausted, key=lambda s: s.window.ends_at)
        wait_s = spent.window.seconds_left(self.now_s)
        limit = spent.limit
        message = (
            f"Budget exhausted for {limit.scope} {limit.name}: spent ${spent.spent_usd:.4f} of "
            f"${limit.usd:.2f} this {limit.period} (UTC). It resets at {spent.window.resets} "
            f"(in {duration_text(wait_s)})."
        )
        return BudgetExhausted(
            message, retry_after_s=float(max(1, math.ceil(wait_s))), headers=self.headers()
        )


class Budgets:
    """Checks budgets against the ledger's spend, and runs the ledger's accounting."""

    def __init__(
        self,
        config: BudgetsConfig,
        ledger: SpendLedger,
        *,
        clock: Callable[[], float],
        sleep: Callable[[float], Awaitable[object]] = asyncio.sleep,
    ) -> None:
        self._config = config
        self.ledger = ledger
        self._clock = clock
        self._sleep = sleep
        self.metrics: BudgetMetrics | None = None
        self.rerouted = 0
        self.refused = 0

    def limits(self, caller: Caller | None, route: str) -> list[Limit]:
        limits: list[Limit] = []
        if caller is not None:
            action = caller.budget_on_exhausted or self._config.keys.on_exhausted
            target = self._config.keys.fallback_route
            for period, usd in _amounts(caller.budget_usd_per_day, caller.budget_usd_per_month):
                limits.append(Limit("key", caller.key_id, period, usd, action, target))
        budget = self._config.routes.get(route)
        if budget is not None:
            action, target = budget.on_exhausted, budget.fallback_route
            for period, usd in _amounts(budget.usd_per_day, budget.usd_per_month):
                limits.append(Limit("route", route, period, usd, action, target))
        return limits

    async def check(self, caller: Caller | None, route: str) -> BudgetCheck:
        """Where the budgets of `caller` on `route` stand (one bounded Redis read at most)."""
        now = self._clock()
        limits = self.limits(caller, route)
        if not limits:
            return BudgetCheck(route, (), now)
        counters = [SpendCounter(x.scope, x.name, window_of(x.period, now)) for x in limits]
        spent = await self.ledger.spent(counters)
        standings = tuple(
            Standing(limit, counter.window, total)
            for limit, counter, total in zip(limits, counters, spent, strict=True)
        )
        return BudgetCheck(route, standings, now)

    async def reroute(
        self, check: BudgetCheck, caller: Caller | None, fallbacks: Sequence[str]
    ) -> BudgetCheck:
        """For a check with a spent budget: the check of the route to use instead, or
        BudgetExhausted. `fallbacks`: the route's fallback chain, in order."""
        spent = check.exhausted
        if any(s.limit.on_exhausted == "reject" for s in spent):
            self.refused += 1
            raise check.refusal()
        named = [s.limit.fallback_route for s in spent if s.limit.fallback_route is not None]
        for route in named or fallbacks:
            if route == check.route or (caller is not None and not caller.may_use(route)):
                continue
            own = await self.check(None, route)
            if not own.exhausted:
                self.rerouted += 1
                return await self.check(caller, route)
        self.refused += 1
        raise check.refusal()

    async def run(self) -> None:
        """Count spend every `flush_ms` and re-read shared totals every `refresh_ms`.

        With nothing shared to re-read (no Redis) and no route budget to sample, a turn
        waits for spend to count: the first spend queued wakes it, the turn then counts
        what `flush_ms` gathered."""
        flush_s = self._config.flush_ms / 1000.0
        refresh_s = self._config.refresh_ms / 1000.0
        next_refresh = 0.0
        queued: asyncio.Event | None = None
        if not self.ledger.shared and not self._config.routes:
            loop = asyncio.get_running_loop()
            queued = asyncio.Event()
            self.ledger.on_queued(lambda: loop.call_soon_threadsafe(queued.set))
        while True:
            if queued is not None:
                await queued.wait()
                queued.clear()
            await self._sleep(flush_s)
            try:
                next_refresh = await self._turn(next_refresh, refresh_s)
            except Exception:  # accounting must outlive a bug; the next turn tries again
                logger.exception("budgets: accounting failed")

    async def _turn(self, next_refresh: float, refresh_s: float) -> float:
        spends = await self.ledger.flush()
        if self.metrics is not None:
            self.metrics.count(spends)
        if self._clock() < next_refresh:
            return next_refresh
        await self.ledger.refresh()
        self._sample()
        return self._clock() + refresh_s

    def _sample(self) -> None:
        if self.metrics is None:
            return
        now = self._clock()
        for name, budget in self._config.routes.items():
            for period, usd in _amounts(budget.usd_per_day, budget.usd_per_month):
                counter = SpendCounter("route", name, window_of(period, now))
                self.metrics.route_spend(name, period, self.ledger.total(counter), usd)

    async def key_spend(self, keys: Sequence[KeyBudget]) -> dict[str, dict[str, dict[str, Any]]]:
        """Per key id: each window's spend, limit (null: none) and reset, for reports."""
        now = self._clock()
        windows = [window_of(period, now) for period in PERIODS]
        counters = [SpendCounter("key", key[0], w) for key in keys for w in windows]
        totals = await self.ledger.read(counters)
        report: dict[str, dict[str, dict[str, Any]]] = {}
        for key_id, *limits in keys:
            report[key_id] = {
                w.period: {
                    "spent_usd": round(totals[SpendCounter("key", key_id, w)], 6),
                    "limit_usd": limit,
                    "resets": w.resets,
                }
                for w, limit in zip(windows, limits, strict=True)
            }
        return report

    def status(self) -> dict[str, object]:
        return {**self.ledger.status(), "rerouted": self.rerouted, "refused": self.refused}


def _amounts(day: float | None, month: float | None) -> list[tuple[Period, float]]:
    found: list[tuple[Period, float]] = []
    if day is not None:
        found.append(("day", day))
    if month is not None:
        found.append(("month", month))
    return found


def _usd(amount: float) -> str:
    return f"{amount:.6f}".rstrip("0").rstrip(".") if amount else "0"
