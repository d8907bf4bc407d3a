"""The faults the gateway's fault suite needs of an engine: a stream without its closing
event, a stall mid-stream, a 200 whose body is not JSON, an engine that flaps."""

from __future__ import annotations

import asyncio
import contextlib

import httpx
import orjson
import pytest

from tests.emulator.conftest import StartEmulator, chat_request, request_stats, sse_payloads, stats


async def test_omit_done_ends_a_stream_cleanly_without_done(
    start_emulator: StartEmulator,
) -> None:
    server = await start_emulator(faults={"omit_done": True})
    body = chat_request(stream=True, max_tokens=8, stream_options={"include_usage": True})
    async with httpx.AsyncClient(base_url=server.base_url) as http:
        response = await http.post("/chat/completions", json=body)
        assert response.status_code == 200
        payloads = sse_payloads(response.text)
        assert "[DONE]" not in payloads
        assert payloads[-1]["usage"]["completion_tokens"] > 0, "all but the end arrived"
        assert (await request_stats(http))["failed"] == 1


async def test_omit_done_drops_anthropics_message_stop(start_emulator: StartEmulator) -> None:
    server = await start_emulator(faults={"omit_done": True})
    body = {
        "model": "emulated-model",
        "max_tokens": 8,
        "messages": [{"role": "user", "content": "hello"}],
        "stream": True,
    }
    async with httpx.AsyncClient(base_url=server.base_url) as http:
        response = await http.post(
            "/messages", json=body, headers={"anthropic-version": "2023-06-01"}
        )
    events = [ln[7:] for ln in response.text.split("\n") if ln.startswith("event: ")]
    assert events[0] == "message_start" and "message_delta" in events
    assert "message_stop" not in events


async def test_stall_mid_stream_holds_the_rest_back(start_emulator: StartEmulator) -> None:
    server = await start_emulator(
        faults={"stall_mid_stream_after_chunks": 2, "stall_mid_stream_s": 30.0}
    )
    body = chat_request(stream=True, max_tokens=8)
    seen = b""
    async with (
        httpx.AsyncClient(base_url=server.base_url) as http,
        http.stream("POST", "/chat/completions", json=body) as response,
    ):
        chunks = response.aiter_raw()
        while seen.count(b"data: ") < 2:
            seen += await anext(chunks)
        more = asyncio.ensure_future(anext(chunks))
        # A whole answer meanwhile (only streams stall): unstalled, the rest had come first.
        assert (await http.post("/chat/completions", json=chat_request())).status_code == 200
        assert not more.done(), "the rest is held back"
        more.cancel()
        with contextlib.suppress(asyncio.CancelledError):
            await more
    assert seen.count(b"data: ") == 2 and b"[DONE]" not in seen


async def test_malformed_body_is_a_200_that_is_not_json(start_emulator: StartEmulator) -> None:
    server = await start_emulator(faults={"malformed_body": True})
    async with httpx.AsyncClient(base_url=server.base_url) as http:
        response = await http.post("/chat/completions", json=chat_request(max_tokens=8))
        assert response.status_code == 200
        assert response.headers["content-type"] == "application/json"
        assert response.content.startswith(b'{"id":')
        with pytest.raises(orjson.JSONDecodeError):
            orjson.loads(response.content)
        streamed = await http.post("/chat/completions", json=chat_request(stream=True))
        assert sse_payloads(streamed.text)[-1] == "[DONE]", "streams are left alone"


async def test_flap_alternates_failures_and_answers(start_emulator: StartEmulator) -> None:
    server = await start_emulator(faults={"flap_requests": 2, "flap_status": 502})
    async with httpx.AsyncClient(base_url=server.base_url) as http:
        statuses = [
            (await http.post("/chat/completions", json=chat_request(max_tokens=2))).status_code
            for _ in range(6)
        ]
        assert statuses == [502, 502, 200, 200, 502, 502]
        assert (await stats(http))["injected_flap_failures"] == 4
        # New faults start the flap over, down first.
        await http.put(http.base_url.join("/emulator/faults"), json={"flap_requests": 1})
        again = [
            (await http.post("/chat/completions", json=chat_request(max_tokens=2))).status_code
            for _ in range(3)
        ]
        assert again == [503, 200, 503]
