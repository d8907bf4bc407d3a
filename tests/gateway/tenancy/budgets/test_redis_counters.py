"""Spend shared through a real Redis (127.0.0.1:6379), and the in-process fallback."""

from __future__ import annotations

import logging
import time
from datetime import UTC, datetime, timedelta

import pytest
from redis.asyncio import Redis

from gateway.tenancy.budgets.ledger import Spend, SpendLedger
from gateway.tenancy.budgets.redis_counters import GRACE_S, RedisSpend
from gateway.tenancy.budgets.spend_limits import Budgets
from gateway.tenancy.budgets.windows import counters_of
from gateway.tenancy.caller import Caller
from gateway.tenancy.config import BudgetsConfig
from tests.gateway.tenancy.budgets.test_spend_limits import FakeClock
from tests.gateway.tenancy.conftest import REDIS_URL

CLOSED_PORT_URL = "redis://127.0.0.1:9/0"
# Redis expires the counters on its own (real) clock, so the fake one stands at tomorrow's
# noon: the windows the tests spend in end in the future whatever day they run.
_TOMORROW = datetime.fromtimestamp(time.time(), UTC).date() + timedelta(days=1)
NOON = datetime(_TOMORROW.year, _TOMORROW.month, _TOMORROW.day, 12, tzinfo=UTC).timestamp()
MIDNIGHT = NOON + 12 * 3600
"""The end of NOON's day (UTC)."""
KEY = Caller("key_r1", "virtual", budget_usd_per_day=1.0)


def replica(clock: FakeClock, namespace: str, url: str = REDIS_URL, **config: object) -> Budgets:
    settings = BudgetsConfig.model_validate({"backend": "redis", "namespace": namespace, **config})
    redis = RedisSpend(settings.redis_settings(url))
    return Budgets(settings, SpendLedger(settings, redis, clock=clock), clock=clock)


async def test_replicas_share_spend_through_redis(namespace: str) -> None:
    clock = FakeClock(NOON)
    first, second = replica(clock, namespace), replica(clock, namespace)
    try:
        assert not (await second.check(KEY, "default")).exhausted  # a miss: read, 0
        first.ledger.record(Spend("key_r1", None, "default", 0.7, NOON))
        second.ledger.record(Spend("key_r1", None, "default", 0.4, NOON))
        await first.ledger.flush()
        # The second sees its own spend at once, and the first's after a flush or refresh.
        assert (await second.check(KEY, "default")).standings[0].spent_usd == 0.0
        await second.ledger.flush()
        check = await second.check(KEY, "default")
        assert check.standings[0].spent_usd == pytest.approx(1.1)
        await first.ledger.refresh()
        assert (await first.check(KEY, "default")).exhausted
        assert first.ledger.status()["redis"] == "up" and first.ledger.fallbacks == 0
    finally:
        await first.ledger.close()
        await second.ledger.close()


async def test_counters_are_keyed_by_window_and_expire_after_it(namespace: str) -> None:
    clock = FakeClock(NOON)
    book = replica(clock, namespace)
    client = Redis.from_url(REDIS_URL)
    try:
        book.ledger.record(Spend("key_r1", None, "default", 0.25, NOON))
        await book.ledger.flush()
        day = f"{namespace}:budget:key:key_r1:day:{_TOMORROW:%Y-%m-%d}"
        assert await client.get(day) == b"0.25"
        assert await client.expiretime(day) == int(MIDNIGHT) + GRACE_S
        route_month = f"{namespace}:budget:route:default:month:{_TOMORROW:%Y-%m}"
        assert await client.get(route_month) == b"0.25"
    finally:
        await client.aclose()
        await book.ledger.close()


async def test_without_redis_spend_counts_in_process_and_the_outage_is_logged_once(
    caplog: pytest.LogCaptureFixture,
) -> None:
    clock = FakeClock(NOON)
    book = replica(clock, "sy-test-down", CLOSED_PORT_URL, retry_redis_s=5, timeout_ms=200)
    try:
        with caplog.at_level(logging.WARNING, logger="switchyard.budgets"):
            for _ in range(3):
                book.ledger.record(Spend("key_r1", None, "default", 0.4, NOON))
                await book.ledger.flush()
                await book.check(KEY, "default")
                clock.now += 1
        assert (await book.check(KEY, "default")).exhausted  # 1.2 of 1.0, counted here
        assert [r.message for r in caplog.records].count(caplog.records[0].message) == 1
        assert "Redis failed" in caplog.records[0].message
        assert book.ledger.status()["redis"] == "down"
        assert book.ledger.status()["pending_counters"] == 4
    finally:
        await book.ledger.close()


async def test_spend_counted_during_an_outage_reaches_redis_when_it_answers(
    namespace: str,
) -> None:
    clock = FakeClock(NOON)
    book = replica(clock, namespace, retry_redis_s=5)
    redis = book.ledger._redis
    assert redis is not None
    healthy = redis.add

    async def broken(_: object) -> dict[object, float]:
        raise ConnectionError("down")

    redis.add = broken  # type: ignore[method-assign,assignment]
    try:
        book.ledger.record(Spend("key_r1", None, "default", 0.3, NOON))
        await book.ledger.flush()
        assert book.ledger.status()["redis"] == "down"
        redis.add = healthy  # type: ignore[method-assign]
        clock.now += 6
        await book.ledger.flush()
        fresh = replica(clock, namespace)
        try:
            (day, _) = counters_of("key", "key_r1", clock.now)
            assert (await fresh.ledger.spent([day])) == [pytest.approx(0.3)]
        finally:
            await fresh.ledger.close()
    finally:
        await book.ledger.close()
