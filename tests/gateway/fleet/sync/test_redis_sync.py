"""Gateway replicas sharing routing state through a real Redis: prefixes, load, outages.

Sharing tests use the machine's Redis (127.0.0.1:6379), each in its own namespace, whose
keys are deleted afterwards. Outage tests start a private redis-server on a free port and
kill, pause or restart it by PID.
"""

from __future__ import annotations

import asyncio
import random
import signal
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import pytest
from redis.asyncio import Redis
from redis.exceptions import RedisError

from gateway.config.root import parse_config
from gateway.errors import ConfigError
from gateway.fleet.state import FleetState
from gateway.fleet.sync.redis_sync import RedisFleetSync
from gateway.fleet.sync.wire import encode_load
from gateway.prefix.index import CacheSpec, PrefixIndex
from tests.conftest import RunningGateway, StartEmulator, StartGateway, eventually, make_config
from tests.gateway.fleet.conftest import SHARED_REDIS
from tests.gateway.processes import free_port

FAST = {
    "publish_interval_ms": 20,
    "load_ttl_s": 0.5,
    "command_timeout_ms": 200,
    "reconnect_max_s": 0.2,
}
SYSTEM = "You are a careful assistant who answers briefly. " * 80


def chat(question: str, system: str = SYSTEM, **extra: Any) -> dict[str, Any]:
    return {
        "model": "default",
        "messages": [
            {"role": "system", "content": system},
            {"role": "user", "content": question},
        ],
        "max_tokens": 4,
        **extra,
    }


def redis_state(url: str, namespace: str, **overrides: Any) -> dict[str, Any]:
    return {"backend": "redis", "redis_url": url, "namespace": namespace, **FAST, **overrides}


async def status(gw: RunningGateway) -> dict[str, Any]:
    response = await gw.client.get("/v1/switchyard/state")
    assert response.status_code == 200
    body: dict[str, Any] = response.json()
    return body


async def connected(*gateways: RunningGateway, peers: int | None = None) -> bool:
    for gw in gateways:
        s = await status(gw)
        if not s["connected"] or (peers is not None and s["peers"] != peers):
            return False
    return True


def remote_in_flight(gw: RunningGateway, backend: str) -> int:
    view = gw.gateway.state.views([backend])[backend]
    return view.in_flight - gw.gateway.state.in_flight(backend)


def held_tokens(gw: RunningGateway, system: str) -> dict[str, int]:
    """Prompt tokens of chat(…, system) that `gw` predicts each backend holds."""
    router = gw.gateway.router
    body = chat("anything?", system)
    fingerprint = router.fingerprinter.chat("emulated-model", body["messages"])
    matched = router.index.match(fingerprint.blocks, ["a", "b"])
    return {name: fingerprint.tokens_in(n) for name, n in matched.items()}


class PrivateRedis:
    """A redis-server of the test's own on a free loopback port, stopped by PID."""

    def __init__(self, directory: Path) -> None:
        self.port = free_port()
        self.url = f"redis://127.0.0.1:{self.port}/0"
        self._directory = directory
        self._process: asyncio.subprocess.Process | None = None

    async def start(self) -> None:
        self._process = await asyncio.create_subprocess_exec(
            "redis-server",
            *("--port", str(self.port), "--bind", "127.0.0.1"),
            *("--save", "", "--appendonly", "no", "--dir", str(self._directory)),
            stdout=asyncio.subprocess.DEVNULL,
            stderr=asyncio.subprocess.DEVNULL,
        )
        await eventually(self._answers, f"redis-server on port {self.port}")

    async def kill(self) -> None:
        process, self._process = self._process, None
        if process is not None and process.returncode is None:
            process.kill()
            await process.wait()

    def signal(self, signum: int) -> None:
        assert self._process is not None
        self._process.send_signal(signum)

    async def _answers(self) -> bool:
        client = Redis.from_url(self.url, socket_connect_timeout=0.2)
        try:
            return bool(await client.ping())
        except (RedisError, OSError):
            return False
        finally:
            await client.aclose()


@pytest.fixture
async def private_redis(tmp_path: Path) -> AsyncIterator[PrivateRedis]:
    server = PrivateRedis(tmp_path)
    try:
        yield server
    finally:
        await server.kill()


async def test_a_prefix_sent_through_one_replica_is_predicted_cached_by_another(
    namespace: str, start_emulator: StartEmulator, start_gateway: StartGateway
) -> None:
    a, b = await start_emulator(), await start_emulator()
    config = make_config(
        {"a": a.base_url, "b": b.base_url}, state=redis_state(SHARED_REDIS, namespace)
    )
    gw1, gw2 = await start_gateway(config), await start_gateway(config)
    await eventually(lambda: connected(gw1, gw2, peers=1), "both replicas see each other")

    first = await gw1.client.post("/v1/chat/completions", json=chat("one?"))
    assert first.status_code == 200
    served = first.headers["x-switchyard-backend"]
    await eventually(lambda: _applied(gw2, at_least=1), "replica 2 applies replica 1's insert")
    assert (await status(gw1))["applied"] == 0, "a replica ignores its own inserts"

    second = await gw2.client.post("/v1/chat/completions", json=chat("two?"))
    record = (
        await gw2.client.get(f"/v1/switchyard/decisions/{second.headers['x-switchyard-decision']}")
    ).json()
    cached = record["predicted_cached_tokens"]
    assert cached[served] > 0.8 * record["prompt_tokens"]
    assert cached["b" if served == "a" else "a"] == 0


async def _applied(gw: RunningGateway, at_least: int) -> bool:
    return int((await status(gw))["applied"]) >= at_least


async def test_requests_in_flight_through_one_replica_count_in_the_others_view(
    namespace: str, start_emulator: StartEmulator, start_gateway: StartGateway
) -> None:
    slow = await start_emulator(token_delay_ms=50)
    config = make_config({"slow": slow.base_url}, state=redis_state(SHARED_REDIS, namespace))
    gw1, gw2 = await start_gateway(config), await start_gateway(config)
    await eventually(lambda: connected(gw1, gw2, peers=1), "both replicas see each other")

    requests = [
        asyncio.create_task(
            gw1.client.post("/v1/chat/completions", json=chat(f"q{i}", max_tokens=20))
        )
        for i in range(3)
    ]

    async def seen_by_gw2() -> bool:
        return remote_in_flight(gw2, "slow") == 3

    await eventually(seen_by_gw2, "replica 2 sees replica 1's 3 requests in flight")
    backend = (await gw2.client.get("/v1/switchyard/backends")).json()["backends"][0]
    assert backend["in_flight"] == 0 and backend["remote_in_flight"] == 3
    assert [r.status_code for r in await asyncio.gather(*requests)] == [200] * 3

    async def drained() -> bool:
        return gw2.gateway.state.views(["slow"])["slow"].in_flight == 0

    await eventually(drained, "finished requests leave replica 2's view")

    await gw1.close()
    await eventually(lambda: connected(gw2, peers=0), "a stopped replica leaves at once")


async def test_a_silent_replicas_load_expires_after_load_ttl(
    namespace: str, start_emulator: StartEmulator, start_gateway: StartGateway
) -> None:
    engine = await start_emulator()
    config = make_config(
        {"slow": engine.base_url}, state=redis_state(SHARED_REDIS, namespace, load_ttl_s=0.3)
    )
    gw = await start_gateway(config)
    await eventually(lambda: connected(gw), "connected")
    client = Redis.from_url(SHARED_REDIS)
    try:
        # A replica that crashed right after writing its load: nobody refreshes it.
        await client.set(f"{namespace}:load:dead", encode_load({"slow": (5, 900, 2)}), px=300)
        await client.set(f"{namespace}:load:garbled", b"not json", px=300)
        await client.sadd(f"{namespace}:replicas", "dead", "garbled")

        async def counted() -> bool:
            return remote_in_flight(gw, "slow") == 5

        await eventually(counted, "the dead replica's load is counted while it lasts")
        assert (await status(gw))["rejected"] >= 1

        async def expired() -> bool:
            return remote_in_flight(gw, "slow") == 0 and (await status(gw))["peers"] == 0

        await eventually(expired, "the dead replica's load expires")
        assert not await client.sismember(f"{namespace}:replicas", "dead")
    finally:
        await client.aclose()


async def test_a_redis_outage_degrades_to_local_state_and_sharing_resumes(
    private_redis: PrivateRedis, start_emulator: StartEmulator, start_gateway: StartGateway
) -> None:
    await private_redis.start()
    a, b = await start_emulator(), await start_emulator()
    config = make_config(
        {"a": a.base_url, "b": b.base_url}, state=redis_state(private_redis.url, "outage")
    )
    gw1, gw2 = await start_gateway(config), await start_gateway(config)
    await eventually(lambda: connected(gw1, gw2, peers=1), "both replicas see each other")

    await private_redis.kill()
    for i in range(5):
        response = await gw1.client.post("/v1/chat/completions", json=chat(f"during {i}?"))
        assert response.status_code == 200

    async def both_degraded() -> bool:
        return not any([(await status(gw))["connected"] for gw in (gw1, gw2)])

    await eventually(both_degraded, "both replicas report the outage")
    down = await status(gw1)
    assert down["last_error"] and down["peers"] == 0

    await private_redis.start()
    await eventually(lambda: connected(gw1, gw2, peers=1), "both replicas reconnect")
    fresh = "A new system prompt after the outage. " * 60
    response = await gw1.client.post("/v1/chat/completions", json=chat("back?", fresh))
    served = response.headers["x-switchyard-backend"]

    async def shared() -> bool:
        return held_tokens(gw2, fresh)[served] > 0

    await eventually(shared, "replica 2 learns replica 1's new prefix")


async def test_a_paused_redis_never_slows_requests(
    private_redis: PrivateRedis, start_emulator: StartEmulator, start_gateway: StartGateway
) -> None:
    await private_redis.start()
    engine = await start_emulator()
    # Were Redis on the request path, a request would wait out command_timeout_ms, by when
    # the sync's own command (one every 20 ms) has timed out too: no longer connected.
    state = redis_state(private_redis.url, "paused", command_timeout_ms=1000)
    config = make_config({"only": engine.base_url}, state=state)
    gw = await start_gateway(config)
    await eventually(lambda: connected(gw), "connected")
    private_redis.signal(signal.SIGSTOP)  # accepts nothing, answers nothing: a hung server
    try:
        for i in range(20):
            response = await gw.client.post("/v1/chat/completions", json=chat(f"q{i}?"))
            assert response.status_code == 200
        assert (await status(gw))["connected"], "every request answered while Redis hung"
        await eventually(lambda: _disconnected(gw), "the command timeout notices the hang")
    finally:
        private_redis.signal(signal.SIGCONT)
    await eventually(lambda: connected(gw), "reconnects once Redis answers again")


async def _disconnected(gw: RunningGateway) -> bool:
    return not (await status(gw))["connected"]


async def test_unreachable_redis_at_start_serves_on_local_state_with_a_bounded_queue(
    start_emulator: StartEmulator,
    start_gateway: StartGateway,
    caplog: pytest.LogCaptureFixture,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    engine = await start_emulator()
    closed = f"redis://127.0.0.1:{free_port()}/0"
    state = redis_state(closed, "unreachable", queue_size=3)
    gw = await start_gateway(make_config({"only": engine.base_url}, state=state))
    sync = gw.gateway.sync
    assert isinstance(sync, RedisFleetSync)
    attempts = 0
    open_client = sync._open

    def counted() -> Redis:
        nonlocal attempts
        attempts += 1
        return open_client()

    monkeypatch.setattr(sync, "_open", counted)
    for i in range(8):
        response = await gw.client.post("/v1/chat/completions", json=chat(f"q{i}?"))
        assert response.status_code == 200
    await eventually(lambda: _disconnected(gw), "reports the outage")
    s = await status(gw)
    assert s["queued"] == 3 and s["dropped"] == 5 and s["published"] == 0
    assert "Connection" in s["last_error"] or "connect" in s["last_error"]

    async def retried() -> bool:
        return attempts >= 3

    await eventually(retried, "several reconnect attempts")  # back-off capped at 0.2 s...
    warnings = [r for r in caplog.records if r.name == "switchyard.sync"]
    assert len(warnings) == 1, "...but the outage is logged once"
    assert "unavailable" in warnings[0].getMessage()


async def test_the_local_default_reports_local(
    start_emulator: StartEmulator, start_gateway: StartGateway
) -> None:
    engine = await start_emulator()
    gw = await start_gateway(make_config({"only": engine.base_url}))
    assert (await status(gw))["sync"] == "local"
    assert gw.gateway.sync is None


@pytest.mark.parametrize(
    ("state", "problem"),
    [
        ({"backend": "etcd"}, "state.backend"),
        ({"redis_url": "http://x"}, "state.redis_url"),
        ({"queue_size": 0}, "state.queue_size"),
        ({"publish_interval_ms": 500, "load_ttl_s": 0.5}, "state.load_ttl_s"),
        ({"namespace": "has space"}, "state.namespace"),
        ({"peers": 3}, "state.peers"),
        ({"prober_lease_ttl_s": 0.2}, "state.prober_lease_ttl_s"),
        ({"peer_event_max_age_s": 0}, "state.peer_event_max_age_s"),
    ],
)
def test_state_config_problems_name_their_path(state: dict[str, Any], problem: str) -> None:
    with pytest.raises(ConfigError) as caught:
        parse_config(make_config({"a": "http://127.0.0.1:9/v1"}, state=state))
    assert any(p.startswith(problem) for p in caught.value.problems), caught.value.problems


async def test_stopping_is_prompt_whenever_it_lands(namespace: str) -> None:
    # redis-py can swallow a task's cancel: stop() must still end the sync task within a
    # tick (before the fix, this hung), or the gateway's shutdown waits for its own timeout.
    config = parse_config(
        make_config(
            {"a": "http://127.0.0.1:9/v1"},
            state=redis_state(SHARED_REDIS, namespace, publish_interval_ms=5, load_ttl_s=0.1),
        )
    )
    state = FleetState(config.backends, config.health)
    index = PrefixIndex({"a": CacheSpec(100_000, 600.0)})
    rng = random.Random(7)
    for _ in range(30):
        sync = RedisFleetSync(config.state, state, index)
        sync.start()
        await asyncio.sleep(rng.uniform(0.0, 0.03))  # a moment anywhere in its cycle
        async with asyncio.timeout(5):  # a hang guard: it used to hang
            await sync.stop()
        assert not [t for t in asyncio.all_tasks() if t.get_name() == "fleet-sync"]


@pytest.mark.parametrize(
    ("publish_interval_ms", "connected_before", "delays_s"),
    [
        pytest.param(20, set(), [0.02, 0.04, 0.08, 0.16, 0.2, 0.2], id="doubles-to-the-cap"),
        pytest.param(20, {3}, [0.02, 0.04, 0.08, 0.02, 0.04], id="a-connection-starts-over"),
        pytest.param(500, set(), [0.5, 0.2, 0.2], id="an-interval-above-the-cap-once"),
    ],
)
async def test_reconnects_back_off_from_the_publish_interval_to_the_cap(
    monkeypatch: pytest.MonkeyPatch,
    publish_interval_ms: float,
    connected_before: set[int],
    delays_s: list[float],
) -> None:
    """No Redis needed: every connection attempt fails (some after serving for a while)."""
    state_config = redis_state(
        SHARED_REDIS, "backoff", publish_interval_ms=publish_interval_ms, load_ttl_s=1.0
    )
    config = parse_config(make_config({"a": "http://127.0.0.1:9/v1"}, state=state_config))
    index = PrefixIndex({"a": CacheSpec(100_000, 600.0)})
    state = FleetState(config.backends, config.health)
    sync = RedisFleetSync(config.state, state, index, rng=random.Random(5))
    attempts = 0
    slept: list[float] = []

    def failing_open() -> Redis:
        nonlocal attempts
        if attempts in connected_before:
            sync._mark_connected()  # it served, then lost the connection
        attempts += 1
        raise ConnectionRefusedError("refused")

    async def record_sleep(delay_s: float) -> None:
        slept.append(delay_s)
        sync._stopping = len(slept) == len(delays_s)

    monkeypatch.setattr(sync, "_open", failing_open)
    monkeypatch.setattr(asyncio, "sleep", record_sleep)
    await sync._run()
    rng = random.Random(5)  # the sync's draws: up to a fifth longer each
    assert slept == pytest.approx([d * (1.0 + 0.2 * rng.random()) for d in delays_s], rel=1e-12)
