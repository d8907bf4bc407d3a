"""Splicing: a stream relayed through the gateway on uvicorn is written to the client from
the upstream connection's callbacks, in OpenAI's format or translated; the client gets
what the pulled relay would give it, a slow client gets all of it, and a client that
cannot keep up stops the gateway reading the backend until it can."""

from __future__ import annotations

import asyncio
import socket
from collections.abc import Awaitable
from typing import Any

import httpx
import orjson
import pytest

from gateway.http.relay.splice import ClientWriter, Splice
from gateway.http.relay.streaming import RelayState, StreamOutcome
from providers.base import StreamSink, StreamValve
from providers.rate_limits import RateLimitSignal
from tests.conftest import RunningGateway
from tests.gateway.http.test_relay_end import Body

CHAT: dict[str, Any] = {
    "model": "default",
    "messages": [{"role": "user", "content": "tell me something"}],
    "stream": True,
    "stream_options": {"include_usage": True},
}


@pytest.fixture
def spliced(monkeypatch: pytest.MonkeyPatch) -> list[Splice]:
    """Every splice that ran."""
    ran: list[Splice] = []
    run = Splice.run

    async def counted(self: Splice, writer: Any) -> None:
        ran.append(self)
        await run(self, writer)

    monkeypatch.setattr(Splice, "run", counted)
    return ran


def _events(body: bytes) -> list[Any]:
    """Each data event's choices and usage (not its id or time), `[DONE]` as itself."""
    out: list[Any] = []
    for line in body.split(b"\n"):
        if not line.startswith(b"data: "):
            continue
        data = line.removeprefix(b"data: ")
        if data == b"[DONE]":
            out.append("[DONE]")
            continue
        event = orjson.loads(data)
        out.append((event["choices"], event.get("usage")))
    return out


async def _spliced_then_pulled(
    gw: RunningGateway,
    spliced: list[Splice],
    monkeypatch: pytest.MonkeyPatch,
    path: str,
    body: dict[str, Any],
) -> tuple[httpx.Response, httpx.Response]:
    """The same request's answer spliced, then pulled (the server's writer withheld)."""
    first = await gw.client.post(path, json=body)
    assert first.status_code == 200 and len(spliced) == 1
    monkeypatch.setattr(ClientWriter, "of", classmethod(lambda cls, send: None))
    second = await gw.client.post(path, json=body)
    assert second.status_code == 200 and len(spliced) == 1, "pulled this time"
    return first, second


async def test_a_spliced_stream_gives_the_client_what_the_pulled_relay_gives(
    gw: RunningGateway, spliced: list[Splice], monkeypatch: pytest.MonkeyPatch
) -> None:
    body = {**CHAT, "max_tokens": 24}
    path = "/v1/chat/completions"
    first, second = await _spliced_then_pulled(gw, spliced, monkeypatch, path, body)
    events = _events(first.content)
    assert events == _events(second.content)
    assert events[-1] == "[DONE]" and events[-2][1]["completion_tokens"] == 24
    assert first.headers["content-type"] == second.headers["content-type"]


def _anthropic_events(body: bytes) -> list[Any]:
    """Each event's type and what it says, without the message's id."""
    out: list[Any] = []
    for frame in body.split(b"\n\n"):
        if not frame.strip():
            continue
        data = orjson.loads(frame.split(b"data: ", 1)[1])
        data.get("message", {}).pop("id", None)
        out.append(data)
    return out


async def test_a_translated_stream_is_spliced_and_reads_as_the_pulled_one(
    gw: RunningGateway, spliced: list[Splice], monkeypatch: pytest.MonkeyPatch
) -> None:
    body = {
        "model": "default",
        "max_tokens": 12,
        "stream": True,
        "messages": [{"role": "user", "content": "hello"}],
    }
    first, second = await _spliced_then_pulled(gw, spliced, monkeypatch, "/v1/messages", body)
    events = _anthropic_events(first.content)
    assert events == _anthropic_events(second.content)
    assert events[-1]["type"] == "message_stop"
    assert sum(1 for e in events if e["type"] == "content_block_delta") == 12


async def test_a_client_that_reads_late_gets_the_whole_stream(
    gw: RunningGateway, spliced: list[Splice], monkeypatch: pytest.MonkeyPatch
) -> None:
    written_all_it_can = asyncio.Event()  # the whole stream, or until the client is full
    hold, run = Splice._hold, Splice.run

    def holding(self: Splice) -> None:
        written_all_it_can.set()
        hold(self)

    async def running(self: Splice, writer: Any) -> None:
        try:
            await run(self, writer)
        finally:
            written_all_it_can.set()

    monkeypatch.setattr(Splice, "_hold", holding)
    monkeypatch.setattr(Splice, "run", running)
    tokens = 3000
    body = orjson.dumps({**CHAT, "max_tokens": tokens})
    head = (
        b"POST /v1/chat/completions HTTP/1.1\r\nhost: gw\r\ncontent-type: application/json\r\n"
        b"content-length: %d\r\n\r\n" % len(body)
    )
    host, port = gw.url.removeprefix("http://").split(":")
    sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 4096)  # a client with a small window
    sock.setblocking(False)
    loop = asyncio.get_running_loop()
    try:
        await loop.sock_connect(sock, (host, int(port)))
        await loop.sock_sendall(sock, head + body)
        # The gateway writes faster than this client reads: it is done, or waits for it.
        await asyncio.wait_for(written_all_it_can.wait(), 10)
        received = bytearray()
        while not received.endswith(b"\r\n0\r\n\r\n"):
            piece = await asyncio.wait_for(loop.sock_recv(sock, 65536), 10)
            assert piece, "the gateway closed the connection before the stream ended"
            received += piece
    finally:
        sock.close()
    assert len(spliced) == 1
    events = _events(_unchunked(bytes(received)))
    assert events[-1] == "[DONE]" and events[-2][1]["completion_tokens"] == tokens
    assert sum(1 for e in events[:-1] if e[0] and e[0][0]["delta"].get("content")) == tokens


def _unchunked(raw: bytes) -> bytes:
    """The body of a chunked HTTP/1.1 response."""
    _, rest = raw.split(b"\r\n\r\n", 1)
    body = bytearray()
    while True:
        size_line, rest = rest.split(b"\r\n", 1)
        size = int(size_line, 16)
        if size == 0:
            return bytes(body)
        body += rest[:size]
        rest = rest[size + 2 :]


class Pushed:
    """A piped stream of given chunks, pushed one per loop turn while not paused."""

    content_type = "text/event-stream"
    rate_limit: RateLimitSignal | None = None
    can_pipe = True

    def __init__(self, first: bytes, rest: list[bytes]) -> None:
        self.first_chunk = first
        self._rest = rest
        self._sink: StreamSink | None = None
        self.paused = False
        self.pauses = 0
        self.closed = False

    def pipe(self, sink: StreamSink) -> StreamValve:
        self._sink = sink
        asyncio.get_running_loop().call_soon(self._push)
        return self

    def pause(self) -> None:
        self.paused = True
        self.pauses += 1

    def resume(self) -> None:
        self.paused = False
        asyncio.get_running_loop().call_soon(self._push)

    def _push(self) -> None:
        assert self._sink is not None
        if self.paused or self.closed:
            return
        if not self._rest:
            self._sink.end(None)
            return
        self._sink.data(self._rest.pop(0))
        asyncio.get_running_loop().call_soon(self._push)

    def rest(self) -> Any:
        raise AssertionError("a piped stream is not iterated")

    async def aclose(self) -> None:
        self.closed = True


class SlowClient:
    """Takes two writes, then asks to wait until `release` is called; again after each."""

    def __init__(self) -> None:
        self.parts: list[bytes] = []
        self.waits = 0
        self._writable = asyncio.Event()
        self._writable.set()

    def write(self, data: bytes) -> bool:
        if data:
            self.parts.append(data)
            if len(self.parts) % 2 == 0:
                self._writable.clear()
        return not self._writable.is_set()

    async def writable(self) -> None:
        self.waits += 1
        await self._writable.wait()

    def release(self) -> None:
        self._writable.set()


async def _released_until_done(task: Awaitable[None], client: SlowClient) -> None:
    run = asyncio.ensure_future(task)
    while not run.done():
        await asyncio.sleep(0)  # a loop turn: the client took what it was given
        client.release()
    await run


async def test_a_client_that_cannot_keep_up_pauses_the_backend() -> None:
    chunks = [b'data: {"n": %d}\n\n' % i for i in range(9)] + [b"data: [DONE]\n\n"]
    stream = Pushed(chunks[0], chunks[1:])
    client = SlowClient()
    splice = Splice(stream, RelayState(float("inf"), StreamOutcome(), stream.content_type))
    await _released_until_done(splice.run(client), client)
    assert b"".join(client.parts) == b"".join(chunks)
    assert stream.pauses >= 4 and client.waits == stream.pauses
    assert stream.closed


class _Paced:
    """A piped upstream stream that hands a chunk every loop turn while not paused."""

    content_type = "text/event-stream"
    rate_limit: RateLimitSignal | None = None
    first_chunk = b'data: {"choices": []}\n\n'
    can_pipe = True

    def __init__(self) -> None:
        self.paused = False
        self.closed = False
        self._flowing = asyncio.Event()
        self._flowing.set()
        self._task: asyncio.Task[None] | None = None

    def pipe(self, sink: StreamSink) -> StreamValve:
        async def feed() -> None:
            while True:
                await self._flowing.wait()
                sink.data(b'data: {"choices": []}\n\n')
                await asyncio.sleep(0)

        self._task = asyncio.ensure_future(feed())
        return self

    def pause(self) -> None:
        self.paused = True
        self._flowing.clear()

    def resume(self) -> None:
        self.paused = False
        self._flowing.set()

    async def aclose(self) -> None:
        self.closed = True
        if self._task is not None:
            self._task.cancel()


class _StoppedReader(Body):
    """A client that has stopped reading: its buffer is full from the first write on."""

    def write(self, data: bytes) -> bool:
        super().write(data)
        return True

    async def writable(self) -> None:
        await asyncio.Event().wait()  # never


@pytest.mark.usefixtures("virtual_time")
async def test_a_client_that_stops_reading_holds_the_backend_only_until_the_deadline() -> None:
    loop = asyncio.get_running_loop()
    outcome = StreamOutcome()
    upstream = _Paced()
    state = RelayState(loop.time() + 0.3, outcome, upstream.content_type, clock=loop.time)
    client = _StoppedReader()
    await asyncio.wait_for(Splice(upstream, state).run(client), 3)  # type: ignore[arg-type]
    assert upstream.paused and upstream.closed, "the backend was paused, then let go"
    assert outcome.status == "request_deadline", "the client's slowness, not the backend's"
    assert client.parts[-1].startswith(b'data: {"error"')
