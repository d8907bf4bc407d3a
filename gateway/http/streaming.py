"""Relaying a committed upstream stream to the client, byte for byte (but for the model
field, when the backend was asked for another id than the route's name).

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
from gateway.http.model_rename import StreamRenamer
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
        "tail",
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
        self.tail = b""
        """The upstream stream's last bytes (at least the last `_TAIL_BYTES`, or all of a
        shorter stream), to see how it ended."""

    def observe(self, chunk: bytes) -> None:
        """One upstream chunk, as the backend sent it, for the usage and quality taps."""
        self.chunks += 1
        # Most chunks are longer than the tail: keep the chunk itself, no concatenation.
        self.tail = chunk if len(chunk) >= _TAIL_BYTES else (self.tail + chunk)[-_TAIL_BYTES:]
        self.tap.feed(chunk)
        if self.collector is not None:
            self.collector.feed(chunk)


async def relay(
    stream: UpstreamStream,
    deadline: float,
    outcome: StreamOutcome,
    *,
    clock: Callable[[], float] = time.monotonic,
    rename: StreamRenamer | None = None,
) -> AsyncIterator[bytes]:
    """Yield the upstream bytes (through `rename`, if given); finish with an error event if
    the stream breaks."""
    try:
        outcome.first_chunk_at = outcome.last_chunk_at = clock()
        outcome.observe(stream.first_chunk)
        if out := _renamed(stream.first_chunk, rename):
            yield out
        async for chunk in stream.rest():
            outcome.observe(chunk)
            outcome.last_chunk_at = now = clock()
            if out := _renamed(chunk, rename):
                yield out
            if now > deadline:
                # The gateway's own deadline, not the backend's fault: its own code, which
                # the quality signals do not count as an error of the backend.
                raise UpstreamTimeout(
                    "request exceeded its total deadline mid-stream", code="request_deadline"
                )
        if rename is not None and (held := rename.flush()):
            yield held
        tail = outcome.tail
        is_sse = stream.content_type.startswith("text/event-stream")
        ended = _DONE in tail[-_TAIL_BYTES:] or _ends_with_error_event(tail)
        if is_sse and not ended:
            raise UpstreamProtocolError("backend ended the stream without [DONE]")
    except SwitchyardError as exc:
        outcome.error = exc
        outcome.status = exc.code or "error"
        yield (rename.flush() if rename is not None else b"") + error_event(exc)
    except asyncio.CancelledError:
        outcome.status = "cancelled"
        raise
    finally:
        await stream.aclose()


def _renamed(chunk: bytes, rename: StreamRenamer | None) -> bytes:
    return chunk if rename is None else rename.feed(chunk)


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
