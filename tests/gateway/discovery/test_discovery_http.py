"""DNS discovery in a served gateway: a real DNS server on loopback (dnslib), emulated
engines on loopback, and a gateway whose backend entry discovers them while a steady
stream of requests flows. Nothing is lost: every request succeeds while addresses come and
go; a new address gets traffic within about one interval; a removed one finishes what it
had and gets nothing more, and its state leaves the fleet."""

from __future__ import annotations

import asyncio
import logging
import time
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

import httpx
import pytest

from emulator.server import EmulatorServer
from tests.conftest import RunningGateway, StartEmulator, StartGateway, eventually
from tests.gateway.discovery.dns_server import Zone
from tests.integration.lifecycle import (
    ADMIN,
    ADMIN_ENV,
    backend,
    chat,
    file_gateway,
    fleet_config,
)

SRV_NAME = "_openai._tcp.engines.test"
INTERVAL_S = 0.3
CHANGE_WITHIN_S = 20.0
"""Generous: the machine is shared and slow; the design's bound is one interval."""


def config(nameserver: str, discover: dict[str, Any], **extra: Any) -> dict[str, Any]:
    entry = {
        "name": "engines",
        "kind": "openai-compatible",
        "models": ["emulated-model"],
        "discover": {"nameservers": [nameserver], "interval_s": INTERVAL_S, **discover},
    }
    return {
        "backends": [entry, *extra.pop("backends", [])],
        "routes": extra.pop(
            "routes", [{"name": "default", "model": "emulated-model", "backends": ["engines"]}]
        ),
        "profiles": [
            {
                "name": "spread",
                "plugins": [
                    {"ref": "healthy-filter"},
                    {"ref": "round-robin-scorer"},
                    {"ref": "max-score-picker"},
                ],
            }
        ],
        "health": {"active_probes": False},
        **extra,
    }


def name_of(engine: EmulatorServer) -> str:
    return f"engines@127.0.0.1:{engine.port}"


def serving(gw: RunningGateway) -> list[str]:
    return [b.name for b in gw.runtime.current.config.backends]


def publish(zone: Zone, *engines: EmulatorServer) -> None:
    """The SRV name lists `engines`, each as its own target on 127.0.0.1."""
    targets = [(f"e{engine.port}.engines.test", engine.port) for engine in engines]
    for target, _ in targets:
        zone.set_a(target, "127.0.0.1")
    zone.set_srv(SRV_NAME, *targets)


class Traffic:
    """Clients sending requests one after another until stopped, half of them streamed;
    every answer is kept to be checked."""

    def __init__(self, client: httpx.AsyncClient, clients: int = 4) -> None:
        self._client = client
        self._clients = clients
        self.failures: list[str] = []
        self.succeeded = 0
        self._stop = asyncio.Event()

    @asynccontextmanager
    async def flowing(self) -> AsyncIterator[Traffic]:
        tasks = [asyncio.create_task(self._loop(i)) for i in range(self._clients)]
        try:
            yield self
        finally:
            self._stop.set()
            await asyncio.gather(*tasks)

    async def _loop(self, i: int) -> None:
        n = 0
        while not self._stop.is_set():
            n += 1
            stream = (i + n) % 2 == 0
            body = {
                "model": "default",
                "messages": [{"role": "user", "content": f"client {i} request {n}"}],
                "max_tokens": 8,
                "stream": stream,
            }
            try:
                await self._one(body, stream)
            except (httpx.HTTPError, AssertionError) as exc:
                self.failures.append(f"{type(exc).__name__}: {exc}")
            else:
                self.succeeded += 1

    async def _one(self, body: dict[str, Any], stream: bool) -> None:
        if not stream:
            response = await self._client.post("/v1/chat/completions", json=body)
            assert response.status_code == 200, response.text
            assert response.json()["choices"][0]["message"]["content"]
            return
        async with self._client.stream("POST", "/v1/chat/completions", json=body) as response:
            assert response.status_code == 200, await response.aread()
            lines = [line async for line in response.aiter_lines() if line]
        assert lines[-1] == "data: [DONE]", lines[-3:]
        assert not any('"error"' in line for line in lines), lines


async def received(engine: EmulatorServer, more_than: int) -> bool:
    return engine.runtime.stats.received > more_than


async def test_addresses_come_and_go_while_traffic_flows_and_nothing_is_lost(
    zone: Zone, nameserver: str, start_emulator: StartEmulator, start_gateway: StartGateway
) -> None:
    # Each token takes a little while, so that requests are in flight at every change.
    first, second, third = [await start_emulator(token_delay_ms=5.0) for _ in range(3)]
    publish(zone, first, second)
    gw = await start_gateway(config(nameserver, {"dns": SRV_NAME, "record": "SRV"}))
    assert set(serving(gw)) == {name_of(first), name_of(second)}
    estimates = gw.gateway.state.estimates(name_of(second))

    async with Traffic(gw.client).flowing() as traffic:
        await eventually(lambda: received(second, 2), "traffic on both", CHANGE_WITHIN_S)
        assert traffic.failures == []

        publish(zone, first, second, third)  # an engine is added
        await eventually(lambda: received(third, 0), "traffic on the new one", CHANGE_WITHIN_S)
        assert name_of(third) in serving(gw)

        publish(zone, second, third)  # one is removed: it drains
        gone = name_of(first)

        async def dropped() -> bool:
            return gone not in serving(gw) and gw.runtime.retiring == 0

        await eventually(dropped, "the removed one dropped and drained", CHANGE_WITHIN_S)

        # The engine counts a stream done after its last bytes left: a moment after the
        # gateway has them (the gateway's side is `retiring == 0` above).
        async def finished() -> bool:
            return first.runtime.stats.in_flight == 0

        await eventually(finished, "its requests in flight finished", CHANGE_WITHIN_S)
        last = first.runtime.stats.received
        current = gw.runtime.current
        assert gone not in current.providers
        assert gone not in {row["name"] for row in current.state.describe()}
        assert current.state.estimates(name_of(second)) is estimates, "kept its state"
        before = third.runtime.stats.received
        await eventually(lambda: received(third, before + 10), "more traffic", CHANGE_WITHIN_S)
        assert first.runtime.stats.received == last, "no new request after it was dropped"

    assert traffic.failures == []
    assert traffic.succeeded > 20
    assert first.runtime.stats.completed == first.runtime.stats.received


async def test_an_a_record_s_engine_falls_back_when_gone_and_survives_dns_failures(
    zone: Zone,
    nameserver: str,
    start_emulator: StartEmulator,
    start_gateway: StartGateway,
    caplog: pytest.LogCaptureFixture,
) -> None:
    engine, backup = await start_emulator(), await start_emulator()
    zone.set_a("one.engines.test", "127.0.0.1")
    static = {"name": "backup", "base_url": backup.base_url, "models": ["emulated-model"]}
    routes = [
        {
            "name": "default",
            "model": "emulated-model",
            "backends": ["engines"],
            "fallbacks": ["spare"],
        },
        {"name": "spare", "model": "emulated-model", "backends": ["backup"]},
        {"name": "alone", "model": "emulated-model", "backends": ["engines"]},
    ]
    discover = {"dns": "one.engines.test", "record": "A", "port": engine.port}
    gw = await start_gateway(config(nameserver, discover, backends=[static], routes=routes))
    body = {"model": "default", "messages": [{"role": "user", "content": "hi"}], "max_tokens": 4}

    async def answered_by(target: EmulatorServer) -> None:
        before = target.runtime.stats.received
        response = await gw.client.post("/v1/chat/completions", json=body)
        assert response.status_code == 200, response.text
        assert target.runtime.stats.received == before + 1

    await answered_by(engine)

    # The DNS server fails: the last known backends stay, and the error is shown.
    zone.failing = True
    queries = zone.queries

    async def failed_twice() -> bool:
        return zone.queries >= queries + 2

    with caplog.at_level(logging.WARNING, logger="switchyard"):
        await eventually(failed_twice, "lookups failing", CHANGE_WITHIN_S)
    assert "lookup of one.engines.test failed, its 1 backends stay" in caplog.text
    assert serving(gw) == [name_of(engine), "backup"]
    await answered_by(engine)
    status = await gw.client.get("/v1/switchyard/backends")
    (row,) = status.json()["discovery"]
    assert row["last_error"] is not None and row["backends"] == [name_of(engine)]

    # The name goes (NXDOMAIN): no backend left, the route falls back; alone, it is a 503.
    zone.drop("one.engines.test")
    zone.failing = False

    async def emptied() -> bool:
        return serving(gw) == ["backup"]

    await eventually(emptied, "the entry emptied", CHANGE_WITHIN_S)
    await answered_by(backup)
    alone = await gw.client.post("/v1/chat/completions", json=body | {"model": "alone"})
    assert alone.status_code == 503, alone.text
    assert alone.json()["error"]["code"] == "no_backend_available"


async def test_the_bound_caps_the_backends_and_says_so(
    zone: Zone,
    nameserver: str,
    start_emulator: StartEmulator,
    start_gateway: StartGateway,
    caplog: pytest.LogCaptureFixture,
) -> None:
    engines = [await start_emulator() for _ in range(3)]
    publish(zone, *engines)
    discover = {"dns": SRV_NAME, "record": "SRV", "max_backends": 2}
    with caplog.at_level(logging.WARNING, logger="switchyard"):
        gw = await start_gateway(config(nameserver, discover))
    assert len(serving(gw)) == 2
    assert f"{SRV_NAME} has 3 addresses; 2 used (max_backends)" in caplog.text
    dashboard = await gw.client.get("/v1/switchyard/dashboard")
    (row,) = dashboard.json()["discovery"]
    assert (row["entry"], row["found"], row["max_backends"]) == ("engines", 3, 2)
    assert row["backends"] == serving(gw)
    assert row["resolved_at"] <= time.time()


async def test_a_file_reload_keeps_the_discovered_backends_and_their_state(
    tmp_path: Path,
    zone: Zone,
    nameserver: str,
    start_emulator: StartEmulator,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setenv(ADMIN_ENV, "admin-key-1")
    engine = await start_emulator()
    publish(zone, engine)
    entry = config(nameserver, {"dns": SRV_NAME, "record": "SRV"})["backends"][0]
    written = fleet_config([entry], {"default": ["engines"]})
    async with file_gateway(tmp_path / "c.yaml", written) as gw:
        served = await gw.client.post("/v1/chat/completions", json=chat())
        assert served.status_code == 200
        state = gw.gateway.state
        gw.write(fleet_config([entry], {"default": ["engines"], "other": ["engines"]}))
        answer = await gw.client.post("/v1/switchyard/admin/reload", headers=ADMIN)
        assert answer.status_code == 200, answer.text
        assert answer.json()["backends"]["unchanged"] == [name_of(engine)]
        assert answer.json()["routes"]["added"] == ["other"]
        other = next(r for r in gw.gateway.config.routes if r.name == "other")
        assert other.backend_names == (name_of(engine),)
        kept = name_of(engine)
        assert gw.gateway.state.estimates(kept) is state.estimates(kept)
        assert gw.runtime.source.backends[0].discover is not None


async def test_discovery_added_by_a_reload_starts_it(
    tmp_path: Path,
    zone: Zone,
    nameserver: str,
    start_emulator: StartEmulator,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """The first discover block may come with a reload: the loop starts then, its entries
    looked up before the new generation serves, and followed from then on."""
    monkeypatch.setenv(ADMIN_ENV, "admin-key-1")
    engine, more = await start_emulator(), await start_emulator()
    publish(zone, engine)
    static = backend("static", engine.base_url)
    async with file_gateway(
        tmp_path / "c.yaml", fleet_config([static], {"default": ["static"]})
    ) as gw:
        assert gw.app.state.discovery is None
        entry = config(nameserver, {"dns": SRV_NAME, "record": "SRV"})["backends"][0]
        gw.write(fleet_config([static, entry], {"default": ["static"], "pool": ["engines"]}))
        answer = await gw.client.post("/v1/switchyard/admin/reload", headers=ADMIN)
        assert answer.status_code == 200, answer.text
        assert answer.json()["backends"]["added"] == [name_of(engine)]
        served = await gw.client.post("/v1/chat/completions", json=chat(route="pool"))
        assert served.status_code == 200, served.text
        publish(zone, engine, more)

        async def followed() -> bool:
            return name_of(more) in serving(gw)

        await eventually(followed, "the loop follows the DNS", CHANGE_WITHIN_S)
        status = await gw.client.get("/v1/switchyard/backends", headers=ADMIN)
        assert status.json()["discovery"][0]["entry"] == "engines", status.text
