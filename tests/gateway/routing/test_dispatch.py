"""Dispatch over real loopback: retries before the first byte, never after; slots always freed."""

from __future__ import annotations

import asyncio
import contextlib
import socket
from collections.abc import Awaitable, Callable
from typing import Any

import httpx
import orjson

from emulator.server import EmulatorServer
from tests.conftest import RunningGateway, StartEmulator, StartGateway, eventually, make_config

CHAT: dict[str, Any] = {
    "model": "default",
    "messages": [{"role": "user", "content": "hello there"}],
    "max_tokens": 8,
}


def closed_port_url() -> str:
    sock = socket.socket()
    sock.bind(("127.0.0.1", 0))
    port = sock.getsockname()[1]
    sock.close()
    return f"http://127.0.0.1:{port}/v1"


async def decision_of(gw: RunningGateway, response: httpx.Response) -> dict[str, Any]:
    found = await gw.client.get(
        f"/v1/switchyard/decisions/{response.headers['x-switchyard-decision']}"
    )
    assert found.status_code == 200
    decision: dict[str, Any] = found.json()
    return decision


def assert_idle(gw: RunningGateway) -> None:
    for backend in gw.gateway.state.describe():
        assert backend["in_flight"] == 0, backend


async def wait_idle(gw: RunningGateway) -> None:
    async def idle() -> bool:
        return not any(b["in_flight"] for b in gw.gateway.state.describe())

    await eventually(idle, "every backend idle")


def cancelled_upstream(engine: EmulatorServer) -> Callable[[], Awaitable[bool]]:
    async def check() -> bool:
        return engine.runtime.stats.cancelled > 0

    return check


def sse_events(body: bytes) -> list[bytes]:
    return [line[6:] for line in body.split(b"\n") if line.startswith(b"data: ")]


async def test_connect_error_moves_to_next_candidate(
    start_emulator: StartEmulator, start_gateway: StartGateway
) -> None:
    live = await start_emulator()
    gw = await start_gateway(make_config({"a-dead": closed_port_url(), "b-live": live.base_url}))
    response = await gw.client.post("/v1/chat/completions", json=CHAT)
    assert response.status_code == 200
    assert response.headers["x-switchyard-backend"] == "b-live"
    attempts = (await decision_of(gw, response))["attempts"]
    assert [(a["backend"], a["outcome"]) for a in attempts] == [
        ("a-dead", "upstream_connect_error"),
        ("b-live", "ok"),
    ]
    assert_idle(gw)


async def test_5xx_moves_to_next_and_4xx_does_not(
    start_emulator: StartEmulator, start_gateway: StartGateway
) -> None:
    failing = await start_emulator()
    healthy = await start_emulator()
    gw = await start_gateway(make_config({"a": failing.base_url, "b": healthy.base_url}))
    failing.runtime.faults.fail_status = 503
    response = await gw.client.post("/v1/chat/completions", json=CHAT)
    assert response.status_code == 200
    assert response.headers["x-switchyard-backend"] == "b"

    failing.runtime.faults.fail_status = 400
    # seq 1 puts "b" first; seq 2 puts "a" first again.
    await gw.client.post("/v1/chat/completions", json=CHAT)
    response = await gw.client.post("/v1/chat/completions", json=CHAT)
    assert response.status_code == 400
    assert response.json()["error"]["type"] == "invalid_request_error"
    attempts = (await decision_of(gw, response))["attempts"]
    assert [a["outcome"] for a in attempts] == ["upstream_400"]
    assert_idle(gw)


async def test_all_failing_gives_502_within_attempt_budget(
    start_emulator: StartEmulator, start_gateway: StartGateway
) -> None:
    engines = [await start_emulator(faults={"fail_status": 500}) for _ in range(3)]
    config = make_config({f"e{i}": e.base_url for i, e in enumerate(engines)})
    config["retry"] = {"max_attempts": 2}
    gw = await start_gateway(config)
    response = await gw.client.post("/v1/chat/completions", json=CHAT)
    assert response.status_code == 502
    body = response.json()["error"]
    assert body["type"] == "upstream_error" and body["code"] == "upstream_500"
    assert len((await decision_of(gw, response))["attempts"]) == 2
    assert sum(e.runtime.stats.received for e in engines) == 2
    assert_idle(gw)


async def test_first_token_timeout_moves_on_for_streams(
    start_emulator: StartEmulator, start_gateway: StartGateway
) -> None:
    slow = await start_emulator(faults={"stall_before_first_byte_s": 3.0})
    fast = await start_emulator()
    config = make_config({"a-slow": slow.base_url, "b-fast": fast.base_url})
    config["timeouts"] = {"first_token_s": 0.3}
    gw = await start_gateway(config)
    response = await gw.client.post("/v1/chat/completions", json={**CHAT, "stream": True})
    assert response.status_code == 200
    assert response.headers["x-switchyard-backend"] == "b-fast"
    assert sse_events(response.content)[-1] == b"[DONE]"
    outcomes = [a["outcome"] for a in (await decision_of(gw, response))["attempts"]]
    assert outcomes == ["upstream_timeout", "ok"]
    assert_idle(gw)


async def test_retry_after_is_waited_out_on_the_last_candidate(
    start_emulator: StartEmulator, start_gateway: StartGateway
) -> None:
    engine = await start_emulator(faults={"fail_status": 429, "fail_count": 1, "retry_after_s": 1})
    gw = await start_gateway(make_config({"only": engine.base_url}))
    response = await gw.client.post("/v1/chat/completions", json=CHAT)
    assert response.status_code == 200
    outcomes = [a["outcome"] for a in (await decision_of(gw, response))["attempts"]]
    assert outcomes == ["upstream_429", "ok"]


async def test_429_everywhere_reaches_the_client_with_retry_after(
    start_emulator: StartEmulator, start_gateway: StartGateway
) -> None:
    engine = await start_emulator(faults={"fail_status": 429, "retry_after_s": 30})
    gw = await start_gateway(make_config({"only": engine.base_url}))
    response = await gw.client.post("/v1/chat/completions", json=CHAT)
    assert response.status_code == 429
    assert response.headers["retry-after"] == "30"
    backends = {b["name"]: b for b in gw.gateway.state.describe()}
    assert not backends["only"]["healthy"]
    assert "rate limited" in str(backends["only"]["health_reason"])


async def test_consecutive_failures_eject_the_backend(
    start_emulator: StartEmulator, start_gateway: StartGateway
) -> None:
    bad = await start_emulator(faults={"fail_status": 500})
    good = await start_emulator()
    config = make_config({"a-bad": bad.base_url, "b-good": good.base_url})
    config["health"] = {"consecutive_failures": 2, "active_probes": False}
    gw = await start_gateway(config)
    for _ in range(4):
        assert (await gw.client.post("/v1/chat/completions", json=CHAT)).status_code == 200
    response = await gw.client.post("/v1/chat/completions", json=CHAT)
    decision = await decision_of(gw, response)
    bad_report = next(c for c in decision["candidates"] if c["backend"] == "a-bad")
    assert bad_report["dropped_by"] == "healthy-filter"
    assert "ejected after 2 consecutive failures" in bad_report["drop_reason"]
    assert bad.runtime.stats.received == 2


async def test_stream_cut_after_first_byte_ends_with_error_event(
    start_emulator: StartEmulator, start_gateway: StartGateway
) -> None:
    cut = await start_emulator(faults={"cut_stream_after_chunks": 3})
    spare = await start_emulator()
    gw = await start_gateway(make_config({"a-cut": cut.base_url, "b-spare": spare.base_url}))
    response = await gw.client.post(
        "/v1/chat/completions", json={**CHAT, "stream": True, "max_tokens": 20}
    )
    events = sse_events(response.content)
    assert b"[DONE]" not in events
    error = orjson.loads(events[-1])["error"]
    assert error["code"] == "upstream_protocol_error"
    assert spare.runtime.stats.received == 0, "no retry after the first byte"
    await wait_idle(gw)


async def test_stall_between_chunks_ends_with_timeout_event(
    start_emulator: StartEmulator, start_gateway: StartGateway
) -> None:
    engine = await start_emulator(token_delay_ms=1000)
    config = make_config({"only": engine.base_url})
    config["timeouts"] = {"first_token_s": 5, "between_chunks_s": 0.2}
    gw = await start_gateway(config)
    response = await gw.client.post("/v1/chat/completions", json={**CHAT, "stream": True})
    events = sse_events(response.content)
    assert orjson.loads(events[-1])["error"]["code"] == "upstream_timeout"
    await wait_idle(gw)


async def test_client_disconnect_mid_stream_cancels_upstream(
    start_emulator: StartEmulator, start_gateway: StartGateway
) -> None:
    engine = await start_emulator(token_delay_ms=50)
    gw = await start_gateway(make_config({"only": engine.base_url}))
    body = {**CHAT, "stream": True, "max_tokens": 200}
    async with (
        httpx.AsyncClient(base_url=gw.url) as client,
        client.stream("POST", "/v1/chat/completions", json=body) as response,
    ):
        async for _ in response.aiter_bytes():
            break
    await wait_idle(gw)
    await eventually(cancelled_upstream(engine), "the upstream request cancelled")
    assert engine.runtime.stats.cancelled == 1
    assert engine.runtime.stats.completed == 0


async def test_client_disconnect_before_response_cancels_upstream(
    start_emulator: StartEmulator, start_gateway: StartGateway
) -> None:
    engine = await start_emulator(token_delay_ms=50)
    gw = await start_gateway(make_config({"only": engine.base_url}))
    async with httpx.AsyncClient(base_url=gw.url) as client:
        waiting = asyncio.create_task(
            client.post("/v1/chat/completions", json={**CHAT, "max_tokens": 200})
        )

        async def at_the_engine() -> bool:
            return engine.runtime.stats.in_flight == 1

        await eventually(at_the_engine, "the request at the engine")
        waiting.cancel()  # the client gives up before the answer
        with contextlib.suppress(asyncio.CancelledError):
            await waiting
    await wait_idle(gw)
    await eventually(cancelled_upstream(engine), "the upstream request cancelled")
    assert engine.runtime.stats.cancelled == 1


async def test_total_deadline_bounds_a_stream(
    start_emulator: StartEmulator, start_gateway: StartGateway
) -> None:
    engine = await start_emulator(token_delay_ms=100)
    config = make_config({"only": engine.base_url})
    config["timeouts"] = {"total_s": 0.5}
    gw = await start_gateway(config)
    response = await gw.client.post(
        "/v1/chat/completions", json={**CHAT, "stream": True, "max_tokens": 50}
    )
    events = sse_events(response.content)
    assert b"[DONE]" not in events
    assert orjson.loads(events[-1])["error"]["code"] == "request_deadline"
    await wait_idle(gw)


async def test_in_flight_is_counted_while_requests_run(
    start_emulator: StartEmulator, start_gateway: StartGateway
) -> None:
    engine = await start_emulator(token_delay_ms=20)
    gw = await start_gateway(make_config({"only": engine.base_url}))
    tasks = [
        asyncio.create_task(gw.client.post("/v1/chat/completions", json={**CHAT, "max_tokens": 20}))
        for _ in range(5)
    ]

    async def all_in_flight() -> bool:  # each takes 20 tokens x 20 ms
        return gw.gateway.state.in_flight("only") == 5

    await eventually(all_in_flight, "5 requests in flight at once")
    for response in await asyncio.gather(*tasks):
        assert response.status_code == 200
    assert_idle(gw)


async def test_active_probe_marks_a_dead_backend_unhealthy(
    start_emulator: StartEmulator, start_gateway: StartGateway
) -> None:
    live = await start_emulator()
    config = make_config({"a-dead": closed_port_url(), "b-live": live.base_url})
    config["health"] = {"active_probes": True, "probe_interval_s": 0.05}
    gw = await start_gateway(config)

    async def probed() -> bool:
        return not next(b for b in gw.gateway.state.describe() if b["name"] == "a-dead")["healthy"]

    await eventually(probed, "the dead backend probed unhealthy")
    backends = {b["name"]: b for b in gw.gateway.state.describe()}
    assert "probe failed" in str(backends["a-dead"]["health_reason"])
    assert backends["b-live"]["healthy"]
    ready = await gw.client.get("/readyz")
    assert ready.status_code == 200
