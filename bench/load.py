"""The load generator: a minimal HTTP/1.1 keep-alive client on raw asyncio streams.

A full client library (httpx) costs more CPU per request than the gateway under test,
which on two shared cores would blur the numbers; this client only writes one request
and reads one response (content-length, chunked or until close), and records when
the first body bytes and the last arrived.
"""

from __future__ import annotations

import asyncio
import contextlib
import time
from dataclasses import dataclass, field

import orjson

_DONE = b"data: [DONE]"


@dataclass(frozen=True)
class Target:
    """Where requests go: host, port, path and the model name that target expects."""

    name: str
    port: int
    model: str
    path: str = "/v1/chat/completions"
    host: str = "127.0.0.1"


@dataclass
class Sample:
    """One phase slice of one target: per-request timings in seconds, plus failures."""

    latencies: list[float] = field(default_factory=list)
    first_chunk: list[float] = field(default_factory=list)
    chunks: int = 0
    frames: int = 0
    errors: int = 0
    error_examples: list[str] = field(default_factory=list)
    wall_s: float = 0.0

    def merge(self, other: Sample) -> None:
        self.latencies.extend(other.latencies)
        self.first_chunk.extend(other.first_chunk)
        self.chunks += other.chunks
        self.frames += other.frames
        self.errors += other.errors
        self.error_examples.extend(other.error_examples[: 3 - len(self.error_examples)])
        self.wall_s += other.wall_s


class ProtocolError(Exception):
    """The server answered something this client does not accept as a good response."""


MESSAGES_PATH = "/v1/messages"
RESPONSES_PATH = "/v1/responses"
INGRESS_PATHS = {
    "chat": "/v1/chat/completions",
    "messages": MESSAGES_PATH,
    "responses": RESPONSES_PATH,
}
"""The client formats the load can speak: OpenAI's Chat Completions, Anthropic's Messages
and OpenAI's Responses, by the path they are sent to."""
_PROMPT = "Tell me about rail yards."


def request_bytes(target: Target, stream: bool, max_tokens: int) -> bytes:
    """One request in the format of `target.path` (`INGRESS_PATHS`)."""
    body: dict[str, object]
    if target.path == MESSAGES_PATH:
        body = {
            "model": target.model,
            "max_tokens": max_tokens,
            "messages": [{"role": "user", "content": _PROMPT}],
            "stream": stream,
        }
    elif target.path == RESPONSES_PATH:
        body = {
            "model": target.model,
            "input": _PROMPT,
            "max_output_tokens": max_tokens,
            "stream": stream,
        }
    else:
        body = {
            "model": target.model,
            "messages": [{"role": "user", "content": _PROMPT}],
            "max_tokens": max_tokens,
            "stream": stream,
        }
        if stream:
            body["stream_options"] = {"include_usage": True}
    payload = orjson.dumps(body)
    head = (
        f"POST {target.path} HTTP/1.1\r\nhost: {target.host}:{target.port}\r\n"
        "content-type: application/json\r\nauthorization: Bearer none\r\n"
        f"content-length: {len(payload)}\r\n\r\n"
    )
    return head.encode() + payload


@dataclass
class _Response:
    body: bytes
    first_byte_at: float
    keep_alive: bool
    frames: int  # HTTP chunks: tells whether SSE events arrived one by one or coalesced


async def _read_head(reader: asyncio.StreamReader) -> tuple[int, dict[bytes, bytes]]:
    head = await reader.readuntil(b"\r\n\r\n")
    lines = head[:-4].split(b"\r\n")
    status = int(lines[0].split(b" ", 2)[1])
    headers: dict[bytes, bytes] = {}
    for line in lines[1:]:
        name, _, value = line.partition(b":")
        headers[name.strip().lower()] = value.strip()
    return status, headers


async def _read_chunked(reader: asyncio.StreamReader) -> tuple[list[bytes], float]:
    parts: list[bytes] = []
    first_at = 0.0
    while True:
        size_line = await reader.readuntil(b"\r\n")
        size = int(size_line.split(b";", 1)[0], 16)
        if size == 0:
            await reader.readuntil(b"\r\n")  # no trailers are expected: the empty line
            return parts, first_at
        data = await reader.readexactly(size + 2)
        if not first_at:
            first_at = time.perf_counter()
        parts.append(data[:-2])


async def _read_response(reader: asyncio.StreamReader) -> tuple[int, _Response]:
    status, headers = await _read_head(reader)
    keep_alive = headers.get(b"connection", b"").lower() != b"close"
    if b"chunked" in headers.get(b"transfer-encoding", b"").lower():
        parts, first_at = await _read_chunked(reader)
        return status, _Response(b"".join(parts), first_at, keep_alive, len(parts))
    if b"content-length" in headers:
        body = await reader.readexactly(int(headers[b"content-length"]))
    else:
        body, keep_alive = await reader.read(), False
    return status, _Response(body, time.perf_counter(), keep_alive, 1)


_ANSWERED = {MESSAGES_PATH: b'"stop_reason"', RESPONSES_PATH: b'"output"'}
"""What a whole answer holds, by path (Chat Completions': `"choices"`)."""
_ENDED = {
    MESSAGES_PATH: (b"event: message_stop",),
    RESPONSES_PATH: (b"event: response.completed", b"event: response.incomplete"),
}
"""What a stream that ended properly holds, one of, by path (Chat Completions': `[DONE]`);
a Responses stream cut at `max_output_tokens` ends `incomplete`, which is no failure."""


def _check(status: int, body: bytes, stream: bool, path: str = INGRESS_PATHS["chat"]) -> int:
    """Validate one response; return its SSE data events (not counting [DONE])."""
    if status != 200:
        raise ProtocolError(f"HTTP {status}: {body[:160]!r}")
    if not stream:
        if _ANSWERED.get(path, b'"choices"') not in body:
            raise ProtocolError(f"not a whole answer: {body[:160]!r}")
        return 0
    ends = _ENDED.get(path, (_DONE,))
    if not any(end in body for end in ends):
        raise ProtocolError(f"stream without {ends[0].decode()!r}: {body[-160:]!r}")
    events = body.count(b"data:")
    return events - 1 if ends[0] == _DONE else events


class Connection:
    """One keep-alive connection, reopened when the server closes it."""

    def __init__(self, target: Target) -> None:
        self._target = target
        self._reader: asyncio.StreamReader | None = None
        self._writer: asyncio.StreamWriter | None = None

    async def _open(self) -> tuple[asyncio.StreamReader, asyncio.StreamWriter]:
        if self._reader is not None and self._reader.at_eof():
            await self.close()  # the server dropped it while idle (keep-alive timeout)
        if self._reader is None or self._writer is None:
            self._reader, self._writer = await asyncio.open_connection(
                self._target.host, self._target.port, limit=1 << 20
            )
        return self._reader, self._writer

    async def ready(self) -> None:
        with contextlib.suppress(OSError):  # exchange() will retry and count the failure
            await self._open()

    async def close(self) -> None:
        if self._writer is not None:
            self._writer.close()
            with contextlib.suppress(OSError):
                await self._writer.wait_closed()
        self._reader = self._writer = None

    async def exchange(self, request: bytes, stream: bool, sample: Sample) -> None:
        """Send one request, read its response, and record it in ``sample``."""
        try:
            reader, writer = await self._open()
            started = time.perf_counter()
            writer.write(request)
            status, response = await _read_response(reader)
            finished = time.perf_counter()
            sample.chunks += _check(status, response.body, stream, self._target.path)
            sample.frames += response.frames
        except (
            OSError,
            asyncio.IncompleteReadError,
            asyncio.LimitOverrunError,
            ValueError,
            ProtocolError,
        ) as exc:
            await self.close()
            sample.errors += 1
            if len(sample.error_examples) < 3:
                sample.error_examples.append(f"{type(exc).__name__}: {exc}"[:240])
            return
        if not response.keep_alive:
            await self.close()
        sample.latencies.append(finished - started)
        if stream:
            sample.first_chunk.append(response.first_byte_at - started)


class Pool:
    """``size`` connections to one target, each driven by its own worker in a phase."""

    def __init__(self, target: Target, size: int) -> None:
        self.target = target
        self._connections = [Connection(target) for _ in range(size)]

    async def run(self, requests: int, concurrency: int, request: bytes, stream: bool) -> Sample:
        """Send ``requests`` requests, ``concurrency`` at a time, back to back."""
        sample = Sample()
        remaining = requests

        async def worker(connection: Connection) -> None:
            nonlocal remaining
            while remaining > 0:
                remaining -= 1
                await connection.exchange(request, stream, sample)

        active = self._connections[:concurrency]
        await asyncio.gather(*(c.ready() for c in active))  # connect outside the timing
        started = time.perf_counter()
        await asyncio.gather(*(worker(c) for c in active))
        sample.wall_s = time.perf_counter() - started
        return sample

    async def close(self) -> None:
        await asyncio.gather(*(c.close() for c in self._connections))
