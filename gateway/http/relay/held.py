"""A stream held before the client sees it: a cascade's tier answers into a buffer until
its answer ends or a bound passes (output tokens, seconds), so its checks can judge it
before the first byte goes out.

A pump task reads the upstream stream into a bounded queue (the reader waits when the
queue is full: back-pressure reaches the backend, memory stays bounded). `hold()` takes
chunks from the queue until the end, `max_tokens` content chunks (one token each, as
OpenAI-compatible engines stream) or `max_s` seconds. What was held then goes out as the
first chunk of a `HeldStream`, the rest from the queue as it comes.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import AsyncIterator, Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING

import orjson

from providers.transport.sse import SseDecodeError, SseDecoder

if TYPE_CHECKING:
    from providers.base import UpstreamStream
    from providers.rate_limits import RateLimitSignal

QUEUE_CHUNKS = 256
"""Upstream chunks read ahead of the client at most, once the stream is committed."""
_END = object()


@dataclass(slots=True)
class Held:
    """What a hold read: the bytes, how the hold ended, what it counted."""

    data: bytes
    ended: bool
    """The upstream stream ended within the hold (its whole answer is in `data`)."""
    tokens: int
    """Content chunks counted (text or a tool call's part)."""
    error: Exception | None = None
    """The upstream stream broke during the hold (an UpstreamError)."""


class HeldStream:
    """An upstream stream behind a hold: `hold()` first, then relayed like any stream
    (its first chunk is everything held)."""

    __slots__ = (
        "_clock",
        "_ended",
        "_error",
        "_pump",
        "_queue",
        "_upstream",
        "content_type",
        "first_chunk",
        "rate_limit",
    )

    def __init__(
        self, upstream: UpstreamStream, clock: Callable[[], float] = time.monotonic
    ) -> None:
        self._upstream = upstream
        self._clock = clock
        self.content_type = upstream.content_type
        self.rate_limit: RateLimitSignal | None = upstream.rate_limit
        self.first_chunk = b""
        self._ended = False
        self._error: Exception | None = None
        self._queue: asyncio.Queue[bytes | object | BaseException] = asyncio.Queue(QUEUE_CHUNKS)
        self._pump = asyncio.ensure_future(self._read())

    async def _read(self) -> None:
        queue = self._queue
        try:
            await queue.put(self._upstream.first_chunk)
            async for chunk in self._upstream.rest():
                await queue.put(chunk)
        # Whatever ends the read reaches the reader, which else would wait for ever.
        except Exception as exc:  # noqa: BLE001 - raised again in `rest()` or the hold
            await queue.put(exc)
            return
        await queue.put(_END)

    async def hold(self, max_tokens: int, max_s: float) -> Held:
        """Read until the stream ends, `max_tokens` content chunks or `max_s` seconds."""
        parts: list[bytes] = []
        counter = _ContentCounter()
        until = self._clock() + max_s
        while counter.tokens < max_tokens:
            left = until - self._clock()
            if left <= 0:
                break
            try:
                item = await asyncio.wait_for(self._queue.get(), left)
            except TimeoutError:
                break
            if item is _END:
                self.first_chunk = b"".join(parts)
                self._ended = True
                return Held(self.first_chunk, True, counter.tokens)
            if isinstance(item, Exception):
                self.first_chunk = b"".join(parts)
                self._error = item
                return Held(self.first_chunk, False, counter.tokens, error=item)
            assert isinstance(item, bytes)
            parts.append(item)
            counter.feed(item)
        self.first_chunk = b"".join(parts)
        return Held(self.first_chunk, False, counter.tokens)

    async def rest(self) -> AsyncIterator[bytes]:
        if self._error is not None:  # the hold took it: raised again, not waited for
            raise self._error
        while not self._ended:
            item = await self._queue.get()
            if item is _END:
                self._ended = True
                return
            if isinstance(item, BaseException):
                raise item
            assert isinstance(item, bytes)
            yield item

    async def aclose(self) -> None:
        self._pump.cancel()
        await asyncio.wait([self._pump])  # its cancellation, not the caller's, is absorbed
        await self._upstream.aclose()


class _ContentCounter:
    """Counts the chunks of an OpenAI chat stream that carry answer content."""

    __slots__ = ("_decoder", "tokens")

    def __init__(self) -> None:
        self._decoder = SseDecoder()
        self.tokens = 0

    def feed(self, chunk: bytes) -> None:
        try:
            events = self._decoder.feed(chunk)
        except SseDecodeError:
            return
        for payload in events:
            if payload == b"[DONE]" or not (
                b'"content"' in payload or b'"tool_calls"' in payload or b'"reasoning' in payload
            ):
                continue
            try:
                event = orjson.loads(payload)
            except orjson.JSONDecodeError:
                continue
            if _has_content(event):
                self.tokens += 1


def _has_content(event: object) -> bool:
    choices = event.get("choices") if isinstance(event, dict) else None
    if not isinstance(choices, list) or not choices or not isinstance(choices[0], dict):
        return False
    delta = choices[0].get("delta")
    if not isinstance(delta, dict):
        return False
    # Reasoning counts too: a thinking model's hold ends on tokens, not only on `hold_s`.
    return any(
        delta.get(key) for key in ("content", "tool_calls", "reasoning_content", "reasoning")
    )
