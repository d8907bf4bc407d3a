"""The rate limiter: headers and refusals on a fake clock, in-process and in real Redis
(a unique namespace per test, deleted after), and its fallback when Redis is gone."""

from __future__ import annotations

import logging

import pytest

from gateway.config.redis import RedisSettings
from gateway.errors import RateLimited
from gateway.tenancy.caller import Caller
from gateway.tenancy.config import LimitsConfig, RateLimit
from gateway.tenancy.limiter import RateLimiter
from gateway.tenancy.redis_buckets import RedisBuckets
from tests.gateway.tenancy.conftest import REDIS_URL

CLOSED_PORT_URL = "redis://127.0.0.1:9/0"
KEY = Caller("key_t1", "virtual", team="search", rpm=2, tpm=1_000)


class FakeClock:
    def __init__(self) -> None:
        self.now = 1_000_000.0

    def __call__(self) -> float:
        return self.now


def buckets(namespace: str, url: str = REDIS_URL, timeout_ms: float = 1000) -> RedisBuckets:
    return RedisBuckets(RedisSettings(url=url, namespace=namespace, timeout_ms=timeout_ms))


def limiter(clock: FakeClock, redis: RedisBuckets | None = None, **config: object) -> RateLimiter:
    settings = LimitsConfig.model_validate({"timeout_ms": 1000, **config})
    return RateLimiter(settings, redis, clock=clock)


async def test_the_answer_carries_openais_headers() -> None:
    clock = FakeClock()
    headers = await limiter(clock).admit(KEY, "default", 300)
    assert headers == {
        "x-ratelimit-limit-requests": "2",
        "x-ratelimit-remaining-requests": "1",
        "x-ratelimit-reset-requests": "30s",
        "x-ratelimit-limit-tokens": "1000",
        "x-ratelimit-remaining-tokens": "700",
        "x-ratelimit-reset-tokens": "18s",
    }


async def test_beyond_the_limit_a_429_says_when_to_come_back() -> None:
    clock = FakeClock()
    limits = limiter(clock)
    await limits.admit(KEY, "default", 10)
    await limits.admit(KEY, "default", 10)
    with pytest.raises(RateLimited) as caught:
        await limits.admit(KEY, "default", 10)
    refused = caught.value
    assert (refused.status, refused.type, refused.code) == (429, "requests", "rate_limit_exceeded")
    assert refused.retry_after_s == 30.0
    assert refused.headers["x-ratelimit-remaining-requests"] == "0"
    assert "key key_t1 on requests per min (RPM): Limit 2" in refused.message
    clock.now += 30
    await limits.admit(KEY, "default", 10)


async def test_the_tightest_of_key_and_route_limits_applies() -> None:
    clock = FakeClock()
    limits = limiter(clock, routes={"default": RateLimit(tpm=500)})
    headers = await limits.admit(KEY, "default", 300)
    assert headers["x-ratelimit-limit-tokens"] == "500"  # the route's: 200 left, not 700
    with pytest.raises(RateLimited) as caught:
        await limits.admit(KEY, "default", 300)
    assert caught.value.type == "tokens" and "route default" in caught.value.message
    assert await limits.admit(KEY, "other", 300)  # another route: only the key's limits


async def test_a_request_larger_than_the_limit_is_refused_without_a_retry_after() -> None:
    with pytest.raises(RateLimited) as caught:
        await limiter(FakeClock()).admit(KEY, "default", 1_001)
    assert caught.value.retry_after_s is None
    assert "Request too large" in caught.value.message


async def test_no_limit_costs_nothing() -> None:
    assert await limiter(FakeClock()).admit(None, "default", 10) == {}
    assert await limiter(FakeClock()).admit(Caller("s", "static"), "default", 10) == {}


def test_tpm_is_charged_prompt_plus_max_tokens_or_the_default() -> None:
    limits = limiter(FakeClock(), default_max_tokens=256)
    assert limits.charge_tokens(100, 50) == 150
    assert limits.charge_tokens(100, None) == 356


async def test_replicas_share_their_buckets_through_redis(namespace: str) -> None:
    clock = FakeClock()
    one = buckets(namespace)
    two = buckets(namespace)
    first, second = limiter(clock, one), limiter(clock, two)
    try:
        headers = await first.admit(KEY, "default", 100)
        assert headers["x-ratelimit-remaining-requests"] == "1"
        assert (await second.admit(KEY, "default", 100))["x-ratelimit-remaining-tokens"] == "800"
        with pytest.raises(RateLimited) as caught:
            await first.admit(KEY, "default", 100)
        assert caught.value.retry_after_s == 30.0
        clock.now += 30
        await second.admit(KEY, "default", 100)
        assert first.status()["redis"] == "up" and first.fallbacks == 0
    finally:
        await first.close()
        await second.close()


async def test_redis_refuses_all_or_nothing_atomically(namespace: str) -> None:
    clock = FakeClock()
    limits = limiter(clock, buckets(namespace))
    try:
        await limits.admit(KEY, "default", 900)
        with pytest.raises(RateLimited):
            await limits.admit(KEY, "default", 200)  # tokens short: the request not charged
        headers = await limits.admit(KEY, "default", 100)
        assert headers["x-ratelimit-remaining-requests"] == "0"
        assert headers["x-ratelimit-remaining-tokens"] == "0"
    finally:
        await limits.close()


async def test_without_redis_limits_hold_in_process_and_the_outage_is_logged_once(
    caplog: pytest.LogCaptureFixture,
) -> None:
    clock = FakeClock()
    limits = limiter(clock, buckets("sy-test", CLOSED_PORT_URL, 200), retry_redis_s=5)
    try:
        with caplog.at_level(logging.WARNING, "switchyard.limits"):
            await limits.admit(KEY, "default", 10)
            await limits.admit(KEY, "default", 10)
            with pytest.raises(RateLimited):
                await limits.admit(KEY, "default", 10)
            clock.now += 6  # Redis is tried again, fails again: still one line
            with pytest.raises(RateLimited):
                await limits.admit(KEY, "default", 10)
        lines = [r.getMessage() for r in caplog.records if r.name == "switchyard.limits"]
        assert len(lines) == 1 and "per process" in lines[0]
        assert limits.status()["redis"] == "down" and limits.fallbacks == 4
    finally:
        await limits.close()
