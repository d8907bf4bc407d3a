"""Fixtures for emulator tests: real emulators on loopback and an httpx client for each."""

from __future__ import annotations

from collections.abc import AsyncIterator, Awaitable, Callable
from typing import Any

import httpx
import orjson
import pytest

from emulator.server import EmulatorServer
from emulator.settings import EmulatorSettings

StartEmulator = Callable[..., Awaitable[EmulatorServer]]
MODEL = "emulated-model"


@pytest.fixture
async def start_emulator() -> AsyncIterator[StartEmulator]:
    """Start emulators with the given settings; stop them after. Unless given, the token
    delay is 0 and answers run to exactly max_tokens (``ignore_eos``): these tests count
    tokens, chunks and events. The end-of-sequence draw has tests of its own
    (``test_answer_lengths.py``), which ask for ``ignore_eos=False``."""
    started: list[EmulatorServer] = []

    async def start(**settings: Any) -> EmulatorServer:
        settings.setdefault("token_delay_ms", 0.0)
        settings.setdefault("ignore_eos", True)
        server = EmulatorServer(EmulatorSettings(**settings))
        await server.start()
        started.append(server)
        return server

    yield start
    for server in started:
        await server.stop()


@pytest.fixture
async def emulator(start_emulator: StartEmulator) -> EmulatorServer:
    return await start_emulator()


@pytest.fixture
async def client(emulator: EmulatorServer) -> AsyncIterator[httpx.AsyncClient]:
    async with httpx.AsyncClient(base_url=emulator.base_url, timeout=10) as http:
        yield http


def chat_request(**fields: Any) -> dict[str, Any]:
    body: dict[str, Any] = {"model": MODEL, "messages": [{"role": "user", "content": "hello"}]}
    body.update(fields)
    return body


def sse_payloads(text: str) -> list[Any]:
    """Decoded ``data:`` payloads of an SSE body; ``[DONE]`` stays a string."""
    payloads: list[Any] = []
    for line in text.split("\n"):
        if line.startswith("data: "):
            data = line.removeprefix("data: ")
            payloads.append(data if data == "[DONE]" else orjson.loads(data))
    return payloads


REQUEST_COUNTERS = ("received", "completed", "cancelled", "failed", "in_flight")


async def stats(http: httpx.AsyncClient) -> dict[str, float]:
    """All of ``GET /emulator/stats``: request counters and engine numbers."""
    response = await http.get(control_url(http, "stats"))
    result: dict[str, float] = response.json()
    return result


async def request_stats(http: httpx.AsyncClient) -> dict[str, float]:
    """Only the request counters of ``GET /emulator/stats``."""
    numbers = await stats(http)
    return {name: numbers[name] for name in REQUEST_COUNTERS}


def control_url(http: httpx.AsyncClient, name: str) -> httpx.URL:
    """URL of an /emulator/* endpoint; those live outside the client's /v1 base."""
    return http.base_url.join(f"/emulator/{name}")


ANTHROPIC_HEADERS = {"anthropic-version": "2023-06-01"}


def sse_events(text: str) -> list[tuple[str | None, Any]]:
    """(event name, decoded data) of each event of an SSE body, in order."""
    events: list[tuple[str | None, Any]] = []
    for block in text.replace("\r\n", "\n").split("\n\n"):
        name, data = None, None
        for line in block.split("\n"):
            if line.startswith("event: "):
                name = line.removeprefix("event: ")
            elif line.startswith("data: "):
                data = orjson.loads(line.removeprefix("data: "))
        if name is not None or data is not None:
            events.append((name, data))
    return events


@pytest.fixture
async def root_client(emulator: EmulatorServer) -> AsyncIterator[httpx.AsyncClient]:
    """A client at the emulator's origin: Anthropic's paths are under /v1, Gemini's /v1beta."""
    async with httpx.AsyncClient(base_url=emulator.origin, timeout=10) as http:
        yield http
