"""Fault injection and request accounting: failures, stalls, cut streams, disconnects."""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import Callable

import httpx
import pytest

from tests.conftest import eventually
from tests.emulator.conftest import (
    StartEmulator,
    chat_request,
    control_url,
    request_stats,
    sse_payloads,
    stats,
)


async def test_fail_status_with_retry_after_and_count(start_emulator: StartEmulator) -> None:
    faults = {"fail_status": 503, "fail_count": 2, "retry_after_s": 1.5}
    server = await start_emulator(faults=faults)
    async with httpx.AsyncClient(base_url=server.base_url) as http:
        failures = [await http.post("/chat/completions", json=chat_request()) for _ in range(2)]
        for response in failures:
            assert response.status_code == 503
            assert response.headers["retry-after"] == "1.5"
            error = response.json()["error"]
            assert error["type"] == "server_error" and error["message"]
        assert (await http.post("/chat/completions", json=chat_request())).status_code == 200
        assert (await http.get(control_url(http, "faults"))).json()["fail_count"] == 0
        assert await request_stats(http) == {
            "received": 3,
            "completed": 1,
            "cancelled": 0,
            "failed": 2,
            "in_flight": 0,
        }


async def test_fail_count_minus_one_fails_everything(start_emulator: StartEmulator) -> None:
    server = await start_emulator(faults={"fail_status": 500})
    async with httpx.AsyncClient(base_url=server.base_url) as http:
        for path in ("/chat/completions", "/completions", "/embeddings"):
            assert (await http.post(path, json={})).status_code == 500
        # Health and controls stay up while the engine "fails".
        assert (await http.get(http.base_url.join("/health"))).status_code == 200
        assert (await http.get("/models")).status_code == 200


async def test_put_faults_replaces_them(client: httpx.AsyncClient) -> None:
    url = control_url(client, "faults")
    updated = await client.put(url, json={"fail_status": 429, "fail_count": 1})
    assert updated.status_code == 200
    assert updated.json()["fail_status"] == 429
    limited = await client.post("/chat/completions", json=chat_request())
    assert limited.status_code == 429
    assert limited.json()["error"]["code"] == "rate_limit_exceeded"
    assert "retry-after" not in limited.headers
    assert (await client.post("/chat/completions", json=chat_request())).status_code == 200
    await client.put(url, json={"stall_before_first_byte_s": 0.01})
    current = (await client.get(url)).json()
    assert current["fail_status"] is None and current["stall_before_first_byte_s"] == 0.01


async def test_faults_endpoints_carry_the_quality_faults(client: httpx.AsyncClient) -> None:
    url = control_url(client, "faults")
    faults = {
        "seed": 7,
        "malformed_tool_call_rate": 0.1,
        "loop_rate": 0.2,
        "truncate_context_tokens": 4096,
        "substitute_model": True,
        "latency_spike_rate": 0.3,
        "latency_spike_s": 2.5,
        "error_burst_rate": 0.05,
        "error_burst_length": 3,
        "error_burst_status": 500,
        "cut_stream_rate": 0.4,
    }
    assert (await client.get(url)).json()["error_burst_length"] == 5
    updated = (await client.put(url, json=faults)).json()
    assert {name: updated[name] for name in faults} == faults
    assert (await client.get(url)).json() == updated


@pytest.mark.parametrize(
    "body",
    [
        {"unknown": 1},
        {"fail_status": 200},
        {"fail_count": -2},
        {"loop_rate": 1.5},
        {"cut_stream_rate": -0.1},
        {"error_burst_length": 0},
        {"error_burst_status": 200},
        {"truncate_context_tokens": 0},
        {"latency_spike_s": -1},
    ],
)
async def test_put_faults_rejects_invalid(client: httpx.AsyncClient, body: object) -> None:
    url = control_url(client, "faults")
    response = await client.put(url, json=body)
    assert response.status_code == 400
    assert response.json()["error"]["type"] == "invalid_request_error"
    assert (await client.get(url)).json()["fail_status"] is None


async def test_cut_stream_drops_the_connection(start_emulator: StartEmulator) -> None:
    server = await start_emulator(faults={"cut_stream_after_chunks": 3})
    async with httpx.AsyncClient(base_url=server.base_url) as http:
        received: list[str] = []
        with pytest.raises(httpx.RemoteProtocolError):
            request = chat_request(stream=True, max_tokens=20)
            async with http.stream("POST", "/chat/completions", json=request) as response:
                assert response.status_code == 200
                async for line in response.aiter_lines():
                    received.append(line)
        payloads = sse_payloads("\n".join(received))
        assert len(payloads) <= 3 and "[DONE]" not in payloads
        assert (await stats(http))["failed"] == 1
        # Non-streamed requests are unaffected.
        assert (await http.post("/chat/completions", json=chat_request())).status_code == 200


async def test_error_event_ends_the_stream(start_emulator: StartEmulator) -> None:
    server = await start_emulator(faults={"error_event_after_chunks": 2})
    async with httpx.AsyncClient(base_url=server.base_url) as http:
        request = chat_request(stream=True, max_tokens=20)
        payloads = sse_payloads((await http.post("/chat/completions", json=request)).text)
    assert len(payloads) == 3
    assert set(payloads[-1]["error"]) == {"message", "type", "param", "code"}
    assert all("choices" in payload for payload in payloads[:2])


async def test_stall_holds_back_the_headers_and_nothing_else(start_emulator: StartEmulator) -> None:
    server = await start_emulator(faults={"stall_before_first_byte_s": 60})
    async with httpx.AsyncClient(base_url=server.base_url) as http:

        async def headers() -> int:
            request = chat_request(stream=True)
            async with http.stream("POST", "/chat/completions", json=request) as response:
                return response.status_code

        stalled = asyncio.create_task(headers())
        await _wait_for(http, lambda c: c["in_flight"] == 1)
        assert (await http.get("/models")).status_code == 200  # other requests are answered
        assert not stalled.done(), "no headers while the stall lasts"
        stalled.cancel()
        with contextlib.suppress(asyncio.CancelledError):
            await stalled
        await _wait_for(http, lambda c: c["cancelled"] == 1 and c["in_flight"] == 0)


async def test_client_disconnect_cancels_generation(start_emulator: StartEmulator) -> None:
    server = await start_emulator(token_delay_ms=50)
    async with httpx.AsyncClient(base_url=server.base_url) as http:
        request = chat_request(stream=True, max_tokens=200)
        async with http.stream("POST", "/chat/completions", json=request) as response:
            lines = response.aiter_lines()
            while not (await anext(lines)).startswith("data: "):
                pass
            assert (await stats(http))["in_flight"] == 1
        # Leaving the block before the end closes the connection mid-stream.
        counters = await _wait_for(http, lambda c: c["cancelled"] == 1 and c["in_flight"] == 0)
        assert counters["completed"] == 0


async def test_client_disconnect_cancels_non_streamed_wait(start_emulator: StartEmulator) -> None:
    server = await start_emulator(base_latency_ms=5000)
    async with httpx.AsyncClient(base_url=server.base_url) as http:
        waiting = asyncio.create_task(http.post("/chat/completions", json=chat_request()))
        await _wait_for(http, lambda c: c["in_flight"] == 1)
        waiting.cancel()  # the client gives up
        with contextlib.suppress(asyncio.CancelledError):
            await waiting
        await _wait_for(http, lambda c: c["cancelled"] == 1 and c["in_flight"] == 0)


async def _wait_for(
    http: httpx.AsyncClient, condition: Callable[[dict[str, int]], bool]
) -> dict[str, int]:
    """Poll the counters until ``condition`` holds; cancellation is noticed asynchronously."""
    counters: dict[str, int] = {}

    async def held() -> bool:
        nonlocal counters
        counters = await stats(http)  # type: ignore[assignment]
        return condition(counters)

    await eventually(held, "the counters wanted")
    return counters
