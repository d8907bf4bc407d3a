"""Relaying a committed upstream stream to the client, byte for byte.

A stream always ends with the backend's `data: [DONE]` or with an explicit error event
from the gateway: never a silent truncation. A client that goes away cancels the upstream
request at once.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import AsyncIterator, Callable
from typing import Any

from starlette.responses import Response
from starlette.types import Receive, Scope, Send

from gateway.errors import SwitchyardError
from gateway.http.responses import error_event
from gateway.quality.collect import StreamCollector
from providers.base import UpstreamStream
from providers.errors import UpstreamProtocolError, UpstreamTimeout
from providers.usage import UsageTap

_DONE = b"data: [DONE]"
_TAIL_BYTES = 64


class StreamOutcome:
    """What happened to one relayed stream; filled in as it runs."""

    __slots__ = (
        "chunks",
        "collector",
        "error",
        "first_chunk_at",
        "last_chunk_at",
        "status",
        "tap",
    )

    def __init__(self, collector: StreamCollector | None = None) -> None:
        self.chunks = 0
        self.error: SwitchyardError | None = None
        self.first_chunk_at: float | None = None
        self.last_chunk_at = 0.0
        self.status = "ok"
        self.tap = UsageTap()
        self.collector = collector
        """Keeps the stream's bytes (bounded) for the quality signals, parsed at the end."""


async def relay(
    stream: UpstreamStream,
    deadline: float,
    outcome: StreamOutcome,
    *,
    clock: Callable[[], float] = time.monotonic,
) -> AsyncIterator[bytes]:
    """Yield the upstream bytes; finish with an error event if the stream breaks."""
    tail = b""
    try:
        outcome.first_chunk_at = outcome.last_chunk_at = clock()
        outcome.chunks = 1
        tail = stream.first_chunk[-_TAIL_BYTES:]
        outcome.tap.feed(stream.first_chunk)
        collector = outcome.collector
        if collector is not None:
            collector.feed(stream.first_chunk)
        yield stream.first_chunk
        async for chunk in stream.rest():
            outcome.chunks += 1
            tail = (tail + chunk)[-_TAIL_BYTES:]
            outcome.tap.feed(chunk)
            if collector is not None:
                collector.feed(chunk)
            outcome.last_chunk_at = now = clock()
            yield chunk
            if now > deadline:
                # The gateway's own deadline, not the backend's fault: its own code, which
                # the quality signals do not count as an error of the backend.
                raise UpstreamTimeout(
                    "request exceeded its total deadline mid-stream", code="request_deadline"
                )
        is_sse = stream.content_type.startswith("text/event-stream")
        if is_sse and _DONE not in tail and not _ends_with_error_event(tail):
            raise UpstreamProtocolError("backend ended the stream without [DONE]")
    except SwitchyardError as exc:
        outcome.error = exc
        outcome.status = exc.code or "error"
        yield error_event(exc)
    except asyncio.CancelledError:
        outcome.status = "cancelled"
        raise
    finally:
        await stream.aclose()


def _ends_with_error_event(tail: bytes) -> bool:
    last = tail.rstrip().rsplit(b"\n", 1)[-1]
    return last.startswith(b'data: {"error"')


class RelayResponse(Response):
    """Streams an async byte iterator, then reports back through `on_close`."""

    def __init__(
        self,
        chunks: AsyncIterator[bytes],
        *,
        media_type: str,
        headers: dict[str, str],
        on_close: Callable[[], Any],
    ) -> None:
        # Not Response.__init__: with no body it would announce Content-Length: 0.
        self.status_code = 200
        self.media_type = media_type
        self.background = None
        self.raw_headers = [
            (k.lower().encode("latin-1"), v.encode("latin-1")) for k, v in headers.items()
        ]
        self.raw_headers.append((b"content-type", media_type.encode("latin-1")))
        self._chunks = chunks
        self._on_close = on_close

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        # The caller's disconnect watcher cancels this task when the client leaves; the
        # relay's own `finally` then closes the upstream request.
        try:
            await send(
                {
                    "type": "http.response.start",
                    "status": self.status_code,
                    "headers": self.raw_headers,
                }
            )
            async for chunk in self._chunks:
                await send({"type": "http.response.body", "body": chunk, "more_body": True})
            await send({"type": "http.response.body", "body": b"", "more_body": False})
        finally:
            aclose = getattr(self._chunks, "aclose", None)
            if aclose is not None:
                await aclose()
            self._on_close()


async def wait_disconnect(receive: Receive) -> None:
    while True:
        message = await receive()
        if message["type"] == "http.disconnect":
            return
