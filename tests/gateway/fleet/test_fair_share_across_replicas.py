"""Fairness between tenants is fleet-wide: two gateways sharing a Redis namespace, with flow
control on, each add the other's charges to their tenants' service, so both rank tenants
by what the fleet served them; across a config reload too. A peer's malformed or oversized
message is ignored; without Redis each replica counts its own.

Uses the machine's Redis (127.0.0.1:6379), each test in its own namespace, deleted after.
"""

from __future__ import annotations

import time
from collections.abc import AsyncIterator, Awaitable, Callable
from typing import Any

import httpx
import orjson
import pytest
from redis.asyncio import Redis

from emulator.loopback import LoopbackServer
from gateway.admission.controller import Admission
from gateway.config.root import parse_config
from gateway.fleet.sync.peer_wire import MAX_ITEMS, encode_batch
from gateway.fleet.sync.wire import MAX_MESSAGE_BYTES
from gateway.http.app import SwitchyardApp, create_app
from gateway.process.runtime import Runtime
from tests.conftest import StartEmulator, eventually, make_config
from tests.gateway.fleet.conftest import SHARED_REDIS
from tests.gateway.fleet.sync.test_redis_sync import chat, redis_state
from tests.gateway.processes import free_port

FLOW = {"enabled": True}


class Replica:
    """A served gateway, its runtime (to reload it) and a client."""

    def __init__(self, app: SwitchyardApp, server: LoopbackServer) -> None:
        self.app = app
        self.server = server
        self.client = httpx.AsyncClient(base_url=server.url, timeout=30)

    @property
    def runtime(self) -> Runtime:
        runtime: Runtime = self.app.state.runtime
        return runtime

    @property
    def admission(self) -> Admission:
        admission = self.runtime.current.admission
        assert admission is not None
        return admission

    def service(self, *tenants: str) -> dict[str, float]:
        """Each tenant's decayed service in this replica's ledger, now."""
        return dict(self.admission.ledger.weighted(tenants, self.admission.clock()))

    async def status(self) -> dict[str, Any]:
        response = await self.client.get("/v1/switchyard/state")
        assert response.status_code == 200
        body: dict[str, Any] = response.json()
        return body

    async def tenants(self) -> dict[str, int]:
        counts: dict[str, int] = (await self.status())["channels"]["tenants"]
        return counts

    async def send(self, tenant: str, question: str) -> None:
        headers = {"x-switchyard-tenant": tenant}
        response = await self.client.post(
            "/v1/chat/completions", json=chat(question), headers=headers
        )
        assert response.status_code == 200
        assert response.headers["x-switchyard-admission"] == "immediate"


StartReplica = Callable[[dict[str, Any]], Awaitable[Replica]]


@pytest.fixture
async def start_replica() -> AsyncIterator[StartReplica]:
    running: list[Replica] = []

    async def start(config: dict[str, Any]) -> Replica:
        app = create_app(parse_config(config))
        server = LoopbackServer(app, lifespan="on")
        await server.start()
        running.append(replica := Replica(app, server))
        return replica

    yield start
    for replica in running:
        await replica.client.aclose()
        await replica.server.stop()


async def connected(*replicas: Replica, peers: int) -> bool:
    for replica in replicas:
        s = await replica.status()
        if not s["connected"] or s["peers"] != peers:
            return False
    return True


async def two_replicas(
    start_replica: StartReplica, engine: str, namespace: str
) -> tuple[Replica, Replica, dict[str, Any]]:
    state = redis_state(SHARED_REDIS, namespace, command_timeout_ms=1000)
    config = make_config({"e": engine}, state=state, flow_control=FLOW)
    one, two = await start_replica(config), await start_replica(config)
    await eventually(lambda: connected(one, two, peers=1), "both replicas see each other")
    return one, two, config


async def test_a_tenant_served_through_one_replica_ranks_above_another_on_the_other(
    namespace: str, start_emulator: StartEmulator, start_replica: StartReplica
) -> None:
    engine = await start_emulator()
    one, two, _ = await two_replicas(start_replica, engine.base_url, namespace)
    for i in range(3):
        await one.send("A", f"a{i}?")
    await two.send("B", "b?")  # the only tenant two has served itself

    async def ranks_a_above_b() -> bool:
        seen = two.service("A", "B")
        return seen["A"] > seen["B"] > 0

    await eventually(ranks_a_above_b, "replica 2 counts replica 1's service to A")

    async def agree() -> bool:  # prompts, then answers (output tokens) too, on both sides
        mine, theirs = one.service("A", "B"), two.service("A", "B")
        return all(theirs[t] == pytest.approx(mine[t], rel=1e-3) for t in ("A", "B"))

    await eventually(agree, "both replicas hold the fleet's service to A and B")
    counts = await two.tenants()
    assert counts["applied"] >= 1 and counts["rejected"] == 0 and counts["published"] >= 1


async def test_after_a_reload_the_new_generation_counts_the_peers_charges(
    namespace: str, start_emulator: StartEmulator, start_replica: StartReplica
) -> None:
    engine = await start_emulator()
    one, two, config = await two_replicas(start_replica, engine.base_url, namespace)
    before = two.admission
    config["flow_control"] = {**FLOW, "max_wait_s": 20}
    await two.runtime.apply(parse_config(config))
    assert two.admission is not before
    assert before.ledger.on_charge is None, "the old generation no longer publishes"
    await eventually(lambda: connected(one, two, peers=1), "the new generation's sync joins")

    await one.send("A", "after the reload?")

    async def counted() -> bool:
        return two.service("A")["A"] > 0

    await eventually(counted, "the new generation's ledger gets replica 1's charge")
    await two.send("B", "and here?")

    async def back() -> bool:
        return one.service("B")["B"] > 0

    await eventually(back, "the new generation publishes its own charges")


async def test_a_malformed_or_oversized_peer_message_is_ignored(
    namespace: str, start_emulator: StartEmulator, start_replica: StartReplica
) -> None:
    engine = await start_emulator()
    state = redis_state(SHARED_REDIS, namespace, command_timeout_ms=1000)
    replica = await start_replica(
        make_config({"e": engine.base_url}, state=state, flow_control=FLOW)
    )
    await eventually(lambda: connected(replica, peers=0), "connected")
    now = time.time()
    bad_items: list[dict[str, object]] = [
        {"tenant": "x" * 1000, "tokens": 5, "at": now},
        {"tenant": "A", "tokens": 1e300, "at": now},
        {"tenant": "A", "tokens": -5, "at": now},
        {"tenant": "A", "tokens": 5, "at": "now"},
    ]
    messages = [
        b"not json",
        b"x" * (MAX_MESSAGE_BYTES + 1),
        orjson.dumps({"v": 1, "from": "bad", "items": [{"tenant": "A"}] * (MAX_ITEMS + 1)}),
        *encode_batch("bad", [*bad_items, {"tenant": "good", "tokens": 700.0, "at": now}]),
    ]
    client = Redis.from_url(SHARED_REDIS)
    try:
        for message in messages:
            await client.publish(f"{namespace}:tenants", message)
    finally:
        await client.aclose()

    async def good_applied() -> bool:
        return (await replica.tenants())["applied"] == 1

    await eventually(good_applied, "the one good item is counted")
    assert (await replica.tenants())["rejected"] == 3 + len(bad_items)
    assert replica.service("A", "good") == {"A": 0.0, "good": pytest.approx(700, rel=1e-2)}
    assert (await replica.status())["connected"]
    await replica.send("A", "still serving?")


async def test_without_redis_each_replica_counts_its_own_and_waiting_charges_are_bounded(
    start_emulator: StartEmulator, start_replica: StartReplica
) -> None:
    engine = await start_emulator()
    state = redis_state(f"redis://127.0.0.1:{free_port()}/0", "unreachable")
    flow = {**FLOW, "tenants": {"max_tenants": 2}}
    replica = await start_replica(
        make_config({"e": engine.base_url}, state=state, flow_control=flow)
    )
    for tenant in ("A", "B", "C"):
        await replica.send(tenant, f"{tenant}?")
    seen = replica.service("A", "B", "C")
    assert seen["B"] > 0 and seen["C"] > 0
    assert seen["A"] == 0, "max_tenants 2: the ledger forgot the stalest"
    s = await replica.status()
    assert not s["connected"]
    assert s["channels"]["tenants"]["queued"] == 2
    assert s["channels"]["tenants"]["dropped"] >= 1


@pytest.mark.parametrize(
    ("state", "flow", "shared"),
    [
        pytest.param(None, FLOW, False, id="local-state"),
        pytest.param("redis", {"enabled": False}, False, id="flow-control-off"),
        pytest.param("redis-no-tenants", FLOW, False, id="share-tenants-off"),
        pytest.param("redis", FLOW, True, id="redis-and-flow-control"),
    ],
)
async def test_tenants_are_shared_only_with_redis_and_flow_control(
    start_emulator: StartEmulator,
    start_replica: StartReplica,
    state: str | None,
    flow: dict[str, Any],
    shared: bool,
) -> None:
    engine = await start_emulator()
    sections: dict[str, Any] = {"flow_control": flow}
    if state is not None:
        closed = f"redis://127.0.0.1:{free_port()}/0"  # whether it connects does not matter
        sections["state"] = redis_state(closed, "wiring", share_tenants=state == "redis")
    replica = await start_replica(make_config({"e": engine.base_url}, **sections))
    assert (replica.admission.ledger.on_charge is not None) is shared
    channels = (await replica.status()).get("channels", {})
    assert ("tenants" in channels) is shared


async def test_a_reload_keeps_tenants_service_unless_their_settings_change(
    start_emulator: StartEmulator, start_replica: StartReplica
) -> None:
    engine = await start_emulator()
    config = make_config({"e": engine.base_url}, flow_control=FLOW)
    replica = await start_replica(config)
    await replica.send("A", "a?")
    served = replica.service("A")["A"]
    assert served > 0
    config["flow_control"] = {**FLOW, "max_wait_s": 20}
    await replica.runtime.apply(parse_config(config))
    assert replica.service("A")["A"] == pytest.approx(served, rel=0.05)  # decayed a little
    config["flow_control"] = {**FLOW, "tenants": {"half_life_s": 30}}
    await replica.runtime.apply(parse_config(config))
    assert replica.service("A")["A"] == 0, "new settings: service counted afresh"
