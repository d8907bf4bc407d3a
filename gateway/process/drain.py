"""Graceful shutdown's request side: whether the gateway is draining, and the streams it may
have to end early.

While draining, new proxy requests are refused with `ShuttingDown` (503) and `/readyz`
answers 503. Each relayed stream is watched (`Drain.watch`): when the drain deadline
passes, `cut_streams` makes the upstream stream raise `ShuttingDown`, which the relay turns
into the client format's own error event, as it does any other failure mid-stream.
"""

from __future__ import annotations

import asyncio
import weakref
from collections.abc import AsyncIterator

from gateway.errors import ShuttingDown
from providers.base import StreamSink, StreamValve, UpstreamStream, pipeable
from providers.rate_limits import RateLimitSignal

_CUT = "switchyard: drain deadline passed"
"""The cancellation message of a cut: told apart from a client leaving."""


class Drain:
    """Whether the gateway is draining, and the streams it is relaying now."""

    def __init__(self) -> None:
        self.reason: str | None = None
        """Why the gateway no longer takes requests (`draining`); None while it does."""
        self._streams: weakref.WeakSet[_CuttableStream] = weakref.WeakSet()

    @property
    def draining(self) -> bool:
        return self.reason is not None

    def start(self, reason: str = "draining") -> None:
        self.reason = self.reason or reason

    def watch(self, stream: UpstreamStream) -> UpstreamStream:
        """`stream`, which `cut_streams` can end with `ShuttingDown`."""
        watched = _CuttableStream(stream)
        self._streams.add(watched)
        return watched

    def cut_streams(self) -> set[asyncio.Task[object]]:
        """End every stream still relayed; returns the tasks relaying them."""
        tasks = set()
        for stream in list(self._streams):
            task = stream.cut()
            if task is not None:
                tasks.add(task)
        return tasks


class _CuttableStream:
    """An upstream stream whose `rest()` raises `ShuttingDown` once cut: at once if it is
    waiting for the backend (by cancelling its task), else before the next chunk. Piped,
    a cut ends the sink with `ShuttingDown` at once."""

    def __init__(self, inner: UpstreamStream) -> None:
        self._inner = inner
        self.content_type: str = inner.content_type
        self.first_chunk: bytes = inner.first_chunk
        self.rate_limit: RateLimitSignal | None = inner.rate_limit
        self._task: asyncio.Task[object] | None = None
        self._waiting = False
        self._cut = False
        self._done = False
        self._sink: StreamSink | None = None

    def cut(self) -> asyncio.Task[object] | None:
        if self._done or self._cut:
            return None
        self._cut = True
        if self._sink is not None:
            self._sink.end(_ended())
            return self._task
        if self._waiting and self._task is not None:
            self._task.cancel(_CUT)
        return self._task

    async def rest(self) -> AsyncIterator[bytes]:
        self._task = asyncio.current_task()
        chunks = aiter(self._inner.rest())
        try:
            while True:
                if self._cut:
                    raise _ended()
                self._waiting = True
                try:
                    chunk = await anext(chunks)
                except StopAsyncIteration:
                    return
                except asyncio.CancelledError:
                    # Ours alone: a client leaving at the same moment cancels it once more.
                    if not self._cut or self._task is None or self._task.cancelling() != 1:
                        raise
                    self._task.uncancel()
                    raise _ended() from None
                finally:
                    self._waiting = False
                yield chunk
        finally:
            self._done = True
            await _close_generator(chunks)

    @property
    def can_pipe(self) -> bool:
        return pipeable(self._inner) is not None

    def pipe(self, sink: StreamSink) -> StreamValve:
        inner = pipeable(self._inner)
        if inner is None:
            raise TypeError("the watched stream cannot be piped")
        self._task = asyncio.current_task()
        self._sink = sink
        return inner.pipe(sink)

    async def aclose(self) -> None:
        self._done = True
        self._sink = None
        await self._inner.aclose()


def _ended() -> ShuttingDown:
    return ShuttingDown("the gateway is shutting down; the stream was ended at its drain deadline")


async def _close_generator(chunks: AsyncIterator[bytes]) -> None:
    aclose = getattr(chunks, "aclose", None)
    if aclose is not None:
        await aclose()
