"""The probe lease against the machine's Redis: one holder per namespace, handed on when the
holder releases it or stops renewing, and every replica probing without Redis."""

from __future__ import annotations

import uuid
from collections.abc import AsyncIterator

import pytest
from redis.asyncio import Redis
from redis.exceptions import RedisError

from gateway.fleet.sync.probe_lease import ProbeLease
from tests.gateway.fleet.conftest import SHARED_REDIS

TTL_S = 3.0


class Clock:
    def __init__(self) -> None:
        self.now = 0.0

    def __call__(self) -> float:
        return self.now


@pytest.fixture
async def redis() -> AsyncIterator[tuple[Redis, str]]:
    client = Redis.from_url(SHARED_REDIS)
    try:
        await client.ping()
    except (RedisError, OSError) as exc:
        pytest.fail(f"these tests need the machine's Redis at {SHARED_REDIS}: {exc}")
    key = f"switchyard-test-{uuid.uuid4().hex[:12]}:prober"
    yield client, key
    await client.delete(key)
    await client.aclose()


def leases(key: str, clock: Clock, *holders: str) -> list[ProbeLease]:
    found = [ProbeLease(key, holder, TTL_S, clock=clock) for holder in holders]
    for lease in found:
        lease.shared = True
    return found


async def test_one_holder_among_replicas_and_the_others_skip_their_cycles(
    redis: tuple[Redis, str],
) -> None:
    client, key = redis
    clock = Clock()
    one, two, three = leases(key, clock, "r1", "r2", "r3")
    for lease in (one, two, three):
        await lease.renew(client)
    assert [lease.holding for lease in (one, two, three)] == [True, False, False]
    assert [lease.may_probe() for lease in (one, two, three)] == [True, False, False]
    assert await client.get(key) == b"r1"
    assert 0 < await client.pttl(key) <= TTL_S * 1000
    assert two.status() == {
        "lease": "elsewhere",
        "acquired": 0,
        "lost": 0,
        "cycles_run": 0,
        "cycles_skipped": 1,
    }


async def test_the_holder_renews_within_its_ttl_and_keeps_the_lease(
    redis: tuple[Redis, str],
) -> None:
    client, key = redis
    clock = Clock()
    one, two = leases(key, clock, "r1", "r2")
    await one.renew(client)
    await client.pexpire(key, 50)  # as if most of the TTL had passed
    clock.now += TTL_S / 3
    await one.renew(client)
    assert await client.pttl(key) > 1000
    await two.renew(client)
    assert (one.holding, two.holding, one.acquired) == (True, False, 1)


async def test_a_released_lease_is_taken_at_the_next_try(redis: tuple[Redis, str]) -> None:
    client, key = redis
    clock = Clock()
    one, two = leases(key, clock, "r1", "r2")
    await one.renew(client)
    await two.renew(client)
    await one.release(client)
    assert not one.holding and await client.get(key) is None
    clock.now += TTL_S / 3
    await two.renew(client)
    assert two.holding and await client.get(key) == b"r2"


async def test_a_dead_holders_lease_expires_and_passes_on(redis: tuple[Redis, str]) -> None:
    client, key = redis
    clock = Clock()
    (two,) = leases(key, clock, "r2")
    await client.set(key, "dead", px=1)  # a holder that died: nobody renews its lease
    while await client.exists(key):
        pass
    await two.renew(client)
    assert two.holding


async def test_a_holder_that_lost_its_lease_stops_probing_and_tries_again(
    redis: tuple[Redis, str],
) -> None:
    client, key = redis
    clock = Clock()
    (one,) = leases(key, clock, "r1")
    await one.renew(client)
    await client.set(key, "r2", px=10_000)  # it paused past its TTL; r2 took over
    clock.now += TTL_S / 3
    await one.renew(client)
    assert (one.holding, one.lost, one.may_probe()) == (False, 1, False)
    await one.release(client)  # releasing what it no longer holds leaves r2's lease alone
    assert await client.get(key) == b"r2"


async def test_without_redis_every_replica_probes_and_before_knowing_none_does() -> None:
    lease = ProbeLease("ns:prober", "r1", TTL_S)
    assert lease.shared is None and not lease.may_probe()
    assert lease.status()["lease"] == "pending"
    lease.local()
    assert lease.may_probe() and lease.status()["lease"] == "local"
