"""Replicas agree: two gateways sharing a Redis namespace share health ejections, 429
cool-downs and probe results, and run one prober between them; without Redis, each
probes and judges on its own.

Uses the machine's Redis (127.0.0.1:6379), each test in its own namespace, deleted after.
"""

from __future__ import annotations

from typing import Any

from redis.asyncio import Redis

from tests.conftest import RunningGateway, StartEmulator, StartGateway, eventually, make_config
from tests.gateway.fleet.conftest import SHARED_REDIS
from tests.gateway.fleet.sync.test_redis_sync import chat, connected, status
from tests.gateway.fleet.sync.test_redis_sync import redis_state as fast_redis_state
from tests.gateway.processes import free_port


def redis_state(url: str, namespace: str, **overrides: Any) -> dict[str, Any]:
    """Fast sync, but a command timeout that a busy test machine does not trip: a replica
    that lost Redis for a moment would probe for itself, as it should."""
    return fast_redis_state(url, namespace, **{"command_timeout_ms": 1000, **overrides})


def backend(gw: RunningGateway, name: str) -> dict[str, Any]:
    return next(b for b in gw.gateway.state.describe() if b["name"] == name)


async def served_by(gw: RunningGateway, requests: int) -> list[str]:
    names = []
    for i in range(requests):
        response = await gw.client.post("/v1/chat/completions", json=chat(f"q{i}?"))
        assert response.status_code == 200
        names.append(response.headers["x-switchyard-backend"])
    return names


async def two_replicas(
    start_gateway: StartGateway, backends: dict[str, str], namespace: str, **sections: Any
) -> tuple[RunningGateway, RunningGateway]:
    config = make_config(backends, state=redis_state(SHARED_REDIS, namespace), **sections)
    gw1, gw2 = await start_gateway(config), await start_gateway(config)
    await eventually(lambda: connected(gw1, gw2, peers=1), "both replicas see each other")
    return gw1, gw2


async def test_a_backend_ejected_by_one_replica_is_avoided_by_the_other_unasked(
    namespace: str, start_emulator: StartEmulator, start_gateway: StartGateway
) -> None:
    broken, good = await start_emulator(faults={"fail_status": 500}), await start_emulator()
    health = {"active_probes": False, "consecutive_failures": 1, "ejection_base_s": 60}
    gw1, gw2 = await two_replicas(
        start_gateway, {"broken": broken.base_url, "good": good.base_url}, namespace, health=health
    )
    assert set(await served_by(gw1, 2)) == {"good"}  # one went to broken first, and failed
    assert not backend(gw1, "broken")["healthy"]

    async def ejected_in_gw2() -> bool:
        return not backend(gw2, "broken")["healthy"]

    await eventually(ejected_in_gw2, "replica 2 applies replica 1's ejection")
    row = backend(gw2, "broken")
    assert "ejected after 1 consecutive failures" in str(row["health_reason"])
    assert f"(replica {(await status(gw1))['replica_id'][:8]})" in str(row["health_reason"])
    assert await served_by(gw2, 6) == ["good"] * 6
    assert backend(gw2, "broken")["requests"] == 0, "replica 2 never tried it itself"
    health2 = (await status(gw2))["channels"]["health"]
    assert health2["applied"] >= 1 and health2["rejected"] == 0


async def test_a_replica_that_joins_during_an_ejection_learns_it(
    namespace: str, start_emulator: StartEmulator, start_gateway: StartGateway
) -> None:
    broken, good = await start_emulator(faults={"fail_status": 500}), await start_emulator()
    health = {"active_probes": False, "consecutive_failures": 1, "ejection_base_s": 60}
    config = make_config(
        {"broken": broken.base_url, "good": good.base_url},
        state=redis_state(SHARED_REDIS, namespace),
        health=health,
    )
    gw1 = await start_gateway(config)
    await eventually(lambda: connected(gw1), "connected")
    assert set(await served_by(gw1, 2)) == {"good"}
    await eventually(lambda: _published(gw1), "the ejection went out while nobody else listened")
    late = await start_gateway(config)

    async def learnt() -> bool:
        return not backend(late, "broken")["healthy"]

    await eventually(learnt, "the replica that joined later is told of the running ejection")
    assert await served_by(late, 4) == ["good"] * 4
    assert backend(late, "broken")["requests"] == 0


async def _published(gw: RunningGateway) -> bool:
    return int((await status(gw))["channels"]["health"]["published"]) >= 1


async def test_a_429_cool_down_propagates(
    namespace: str, start_emulator: StartEmulator, start_gateway: StartGateway
) -> None:
    limited = await start_emulator(faults={"fail_status": 429, "retry_after_s": 30})
    good = await start_emulator()
    gw1, gw2 = await two_replicas(
        start_gateway, {"limited": limited.base_url, "good": good.base_url}, namespace
    )
    assert set(await served_by(gw1, 2)) == {"good"}

    async def cooled_in_gw2() -> bool:
        return not backend(gw2, "limited")["healthy"]

    await eventually(cooled_in_gw2, "replica 2 applies replica 1's cool-down")
    assert "rate limited upstream: Retry-After 30.0 s" in str(
        backend(gw2, "limited")["health_reason"]
    )
    assert await served_by(gw2, 4) == ["good"] * 4
    assert backend(gw2, "limited")["requests"] == 0


PROBING = {"active_probes": True, "probe_interval_s": 0.05, "probe_timeout_s": 0.5}


async def test_one_prober_per_fleet_whose_results_reach_the_others_and_which_hands_over(
    namespace: str, start_emulator: StartEmulator, start_gateway: StartGateway
) -> None:
    good = await start_emulator()
    down = f"http://127.0.0.1:{free_port()}/v1"  # nothing listens: every probe fails
    config = make_config(
        {"down": down, "good": good.base_url},
        state=redis_state(SHARED_REDIS, namespace, prober_lease_ttl_s=0.3),
        health=PROBING,
        quality={"enabled": False},
    )
    gw1, gw2 = await start_gateway(config), await start_gateway(config)
    await eventually(lambda: connected(gw1, gw2, peers=1), "both replicas see each other")

    async def leases() -> list[str]:
        return sorted([(await status(gw))["prober"]["lease"] for gw in (gw1, gw2)])

    async def one_holder() -> bool:
        return await leases() == ["elsewhere", "held"]

    await eventually(one_holder, "one replica holds the probe lease")
    holder, other = (gw1, gw2) if (await status(gw1))["prober"]["lease"] == "held" else (gw2, gw1)

    async def probed_everywhere() -> bool:
        return not backend(holder, "down")["healthy"] and not backend(other, "down")["healthy"]

    await eventually(probed_everywhere, "the holder's probe result reaches the other")
    assert "probe" in str(backend(other, "down")["health_reason"])
    assert backend(other, "good")["healthy"]
    assert (await status(other))["prober"]["cycles_run"] == 0, "the other never probed"
    assert (await status(holder))["prober"]["cycles_run"] > 0

    await holder.close()  # releases its lease on the way out

    async def took_over() -> bool:
        prober = (await status(other))["prober"]
        return bool(prober["lease"] == "held" and prober["cycles_run"] > 0)

    await eventually(took_over, "the other replica takes the lease and probes")


async def test_a_dead_holders_lease_expires_and_another_replica_probes(
    namespace: str, start_emulator: StartEmulator, start_gateway: StartGateway
) -> None:
    good = await start_emulator()
    client = Redis.from_url(SHARED_REDIS)
    try:  # a holder that died without releasing: its lease runs out on its own
        await client.set(f"{namespace}:prober", "dead-replica", px=2000)
    finally:
        await client.aclose()
    state = redis_state(SHARED_REDIS, namespace, prober_lease_ttl_s=0.3, command_timeout_ms=1000)
    gw = await start_gateway(make_config({"good": good.base_url}, state=state, health=PROBING))
    await eventually(lambda: connected(gw), "connected")
    assert (await status(gw))["prober"]["lease"] == "elsewhere"

    async def holds() -> bool:
        return bool((await status(gw))["prober"]["lease"] == "held")

    await eventually(holds, "the lease passes on once the dead holder's expires")


async def test_without_redis_each_replica_probes_on_its_own_in_local_mode(
    start_emulator: StartEmulator, start_gateway: StartGateway
) -> None:
    good = await start_emulator()
    down = f"http://127.0.0.1:{free_port()}/v1"
    state = redis_state(f"redis://127.0.0.1:{free_port()}/0", "absent")
    config = make_config({"down": down, "good": good.base_url}, state=state, health=PROBING)
    gw = await start_gateway(config)

    async def probing_locally() -> bool:
        s = await status(gw)
        return bool(s["mode"] == "local" and s["prober"]["cycles_run"] > 0)

    await eventually(probing_locally, "probes run here while Redis is unreachable")
    assert (await status(gw))["prober"]["lease"] == "local"

    async def down_seen() -> bool:
        return not backend(gw, "down")["healthy"]

    await eventually(down_seen, "its own probes find the backend down")
    assert await served_by(gw, 3) == ["good"] * 3


async def test_the_local_default_reports_local_mode(
    start_emulator: StartEmulator, start_gateway: StartGateway
) -> None:
    good = await start_emulator()
    gw = await start_gateway(make_config({"good": good.base_url}, health=PROBING))
    assert (await status(gw))["mode"] == "local"
    assert gw.gateway.may_probe()
