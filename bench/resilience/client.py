"""One request per connection on raw asyncio streams, with when each part of it arrived.

bench/load.py measures latency over keep-alive connections; these scenarios need to know
what happened to each request (refused, failed before its first byte, cut mid-stream) and
when, so every request is its own connection (`connection: close`) and its own `Outcome`.
"""

from __future__ import annotations

import asyncio
import contextlib
import time
from dataclasses import dataclass

import orjson

_DONE = b"data: [DONE]"
_ERROR_EVENT = b'data: {"error"'
_TAIL_BYTES = 64
_MAX_HEAD_BYTES = 64 * 1024
_MAX_BODY_BYTES = 4 * 1024 * 1024


@dataclass
class Outcome:
    """What one request got; times are `time.monotonic()` readings."""

    started: float
    stream: bool
    status: int = 0
    backend: str = ""
    decision: str = ""  # x-switchyard-decision: the id the store's record carries
    head: float | None = None  # the response's status line and headers read
    first_byte: float | None = None
    ended: float = 0.0
    chunks: int = 0
    complete: bool = False  # [DONE] (stream) or a whole JSON body with choices
    error: str = ""

    @property
    def ok(self) -> bool:
        return self.status == 200 and self.complete and not self.error

    @property
    def first_byte_s(self) -> float | None:
        return None if self.first_byte is None else self.first_byte - self.started


def chat_body(model: str, *, stream: bool, max_tokens: int, prompt: str) -> bytes:
    body: dict[str, object] = {
        "model": model,
        "messages": [{"role": "user", "content": prompt}],
        "max_tokens": max_tokens,
        "stream": stream,
    }
    return orjson.dumps(body)


def _request(host: str, port: int, body: bytes) -> bytes:
    head = (
        f"POST /v1/chat/completions HTTP/1.1\r\nhost: {host}:{port}\r\n"
        "content-type: application/json\r\nconnection: close\r\n"
        f"content-length: {len(body)}\r\n\r\n"
    )
    return head.encode() + body


async def send(
    host: str,
    port: int,
    body: bytes,
    *,
    stream: bool,
    timeout_s: float,
    outcome: Outcome | None = None,
) -> Outcome:
    """Post one chat request and read its whole answer within `timeout_s`; never raises
    for network or protocol trouble (it ends up in `Outcome.error`). Pass `outcome` to
    watch it fill in while the answer arrives."""
    outcome = outcome or Outcome(started=time.monotonic(), stream=stream)
    writer: asyncio.StreamWriter | None = None
    try:
        async with asyncio.timeout(timeout_s):
            reader, writer = await asyncio.open_connection(host, port, limit=_MAX_HEAD_BYTES)
            writer.write(_request(host, port, body))
            await _read(reader, outcome)
    except TimeoutError:
        outcome.error = f"no answer within {timeout_s:g} s"
    except (OSError, asyncio.IncompleteReadError, asyncio.LimitOverrunError, ValueError) as exc:
        outcome.error = f"{type(exc).__name__}: {exc}"[:200]
    finally:
        outcome.ended = time.monotonic()
        if writer is not None:
            writer.close()
            with contextlib.suppress(OSError):
                await writer.wait_closed()
    return outcome


async def _read(reader: asyncio.StreamReader, outcome: Outcome) -> None:
    head = await reader.readuntil(b"\r\n\r\n")
    lines = head[:-4].split(b"\r\n")
    outcome.head = time.monotonic()
    outcome.status = int(lines[0].split(b" ", 2)[1])
    headers = {}
    for line in lines[1:]:
        name, _, value = line.partition(b":")
        headers[name.strip().lower()] = value.strip()
    outcome.backend = headers.get(b"x-switchyard-backend", b"").decode()
    outcome.decision = headers.get(b"x-switchyard-decision", b"").decode()
    if b"chunked" in headers.get(b"transfer-encoding", b"").lower():
        await _read_chunked(reader, outcome)
        return
    size = int(headers.get(b"content-length", b"0"))
    if size > _MAX_BODY_BYTES:
        raise ValueError(f"body of {size} bytes")
    body = await reader.readexactly(size)
    outcome.first_byte = time.monotonic()
    outcome.complete = b'"choices"' in body
    if outcome.status != 200:
        outcome.error = f"HTTP {outcome.status}: {body[:160]!r}"


async def _read_chunked(reader: asyncio.StreamReader, outcome: Outcome) -> None:
    tail = b""
    received = 0
    while True:
        size = int((await reader.readuntil(b"\r\n")).split(b";", 1)[0], 16)
        if size == 0:
            await reader.readuntil(b"\r\n")
            break
        data = (await reader.readexactly(size + 2))[:-2]
        received += size
        if received > _MAX_BODY_BYTES:
            raise ValueError(f"stream passed {_MAX_BODY_BYTES} bytes")
        if outcome.first_byte is None:
            outcome.first_byte = time.monotonic()
        outcome.chunks += 1
        window = tail + data
        if _ERROR_EVENT in window and not outcome.error:
            start = window.index(_ERROR_EVENT)
            outcome.error = "error event: " + window[start : start + 160].decode(errors="replace")
        if _DONE in window:
            outcome.complete = True
        tail = window[-_TAIL_BYTES:]
    if outcome.status != 200 and not outcome.error:
        outcome.error = f"HTTP {outcome.status}"
    if not outcome.complete and not outcome.error:
        outcome.error = "stream ended without [DONE]"


def percentile(values: list[float], q: float) -> float | None:
    """The q-quantile (0..1) by nearest rank; None for no values."""
    if not values:
        return None
    ordered = sorted(values)
    rank = min(len(ordered) - 1, max(0, round(q * (len(ordered) - 1))))
    return ordered[rank]
