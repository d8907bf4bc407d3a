"""Graceful shutdown on a running gateway (`Runtime.drain`, what SIGTERM/SIGINT start):
/readyz and new requests answer 503 at once, requests in flight may finish within the
deadline, and a stream still open then ends with its client format's error event."""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Any

import pytest

from tests.conftest import StartEmulator, eventually
from tests.integration.lifecycle import (
    ADMIN_ENV,
    MODEL,
    backend,
    chat,
    file_gateway,
    fleet_config,
    open_stream,
)

CHAT = "/v1/chat/completions"
PROMPT = "tell me about switchyards"
PAUSED = {"stall_mid_stream_after_chunks": 2, "stall_mid_stream_s": 1.0}
"""A stream that pauses for a second after its second chunk, then finishes."""
STUCK = {"stall_mid_stream_after_chunks": 2, "stall_mid_stream_s": 60.0}
"""A stream far longer than any drain deadline here."""


@pytest.fixture(autouse=True)
def admin_key(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv(ADMIN_ENV, "admin-key-1")


async def test_readyz_and_new_requests_answer_503_while_a_stream_finishes(
    tmp_path: Path, start_emulator: StartEmulator
) -> None:
    engine = await start_emulator(token_delay_ms=1.0, faults=PAUSED)
    config = fleet_config([backend("b1", engine.base_url)], {"default": ["b1"]})
    async with file_gateway(tmp_path / "c.yaml", config) as gw:
        assert (await gw.client.get("/readyz")).status_code == 200
        async with open_stream(gw.client, CHAT, chat(stream=True, max_tokens=12)) as stream:
            await stream.read_until("data: ")
            drained = asyncio.create_task(gw.runtime.drain(30.0))
            ready = await gw.client.get("/readyz")
            assert (ready.status_code, ready.json()["status"]) == (503, "draining")
            refused = await gw.client.post(CHAT, json=chat())
            assert refused.status_code == 503
            assert refused.json()["error"]["code"] == "gateway_shutting_down"
            anthropic = await gw.client.post("/v1/messages", json=_messages(stream=False))
            assert (anthropic.status_code, anthropic.json()["type"]) == (503, "error")
            assert not drained.done()  # waiting for the stream
            text = await stream.read_to_end()
        assert text.rstrip().endswith("data: [DONE]") and '"error"' not in text
        await asyncio.wait_for(drained, 10.0)  # returns once nothing is in flight


def _messages(*, stream: bool) -> dict[str, Any]:
    return {
        "model": MODEL,
        "max_tokens": 12,
        "messages": [{"role": "user", "content": PROMPT}],
        "stream": stream,
    }


def _responses() -> dict[str, Any]:
    return {"model": MODEL, "input": PROMPT, "max_output_tokens": 16, "stream": True}


@pytest.mark.parametrize(
    ("path", "body", "ending"),
    [
        (CHAT, chat(stream=True, max_tokens=12), 'data: {"error":'),
        ("/v1/messages", _messages(stream=True), "event: error\n"),
        ("/v1/responses", _responses(), "event: response.failed\n"),
    ],
    ids=["openai", "anthropic", "responses"],
)
async def test_a_stream_past_the_deadline_ends_with_its_formats_error_event(
    tmp_path: Path, start_emulator: StartEmulator, path: str, body: dict[str, Any], ending: str
) -> None:
    engine = await start_emulator(token_delay_ms=1.0, faults=STUCK)
    config = fleet_config([backend("b1", engine.base_url)], {"default": ["b1"]})
    async with file_gateway(tmp_path / "c.yaml", config) as gw:
        async with open_stream(gw.client, path, {**body, "model": "default"}) as stream:
            await stream.read_until("data: ")
            await gw.runtime.drain(0.2)
            text = await stream.read_to_end()
        assert ending in text
        assert "gateway_shutting_down" in text or "shutting down" in text
        assert "[DONE]" not in text
        assert gw.runtime.in_flight() == 0
        described = gw.gateway.state.describe()
        assert [b["in_flight"] for b in described] == [0]  # the lease was finished


async def test_a_request_still_waiting_for_a_backend_at_the_deadline_gets_a_503(
    tmp_path: Path, start_emulator: StartEmulator
) -> None:
    engine = await start_emulator(faults={"stall_before_first_byte_s": 60.0})
    config = fleet_config([backend("b1", engine.base_url)], {"default": ["b1"]})
    async with file_gateway(tmp_path / "c.yaml", config) as gw:
        waiting = asyncio.create_task(gw.client.post(CHAT, json=chat()))
        runtime = gw.runtime

        async def waiting_for_backend() -> bool:
            return runtime.in_flight() == 1

        await eventually(waiting_for_backend, "the request in flight")
        await gw.runtime.drain(0.2)
        answer = await asyncio.wait_for(waiting, 10.0)
        assert answer.status_code == 503
        assert answer.json()["error"]["code"] == "gateway_shutting_down"
