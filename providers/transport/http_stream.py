"""An upstream stream past its first bytes (`HttpStream`): the rest read as it comes, or
piped to a sink from the lean client's connection callbacks, watched for stalls and
bounded in size either way."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator, Callable, Mapping
from typing import Protocol

from providers.base import StreamSink, StreamValve
from providers.errors import (
    UpstreamError,
    UpstreamProtocolError,
    UpstreamResponseTooLarge,
    UpstreamTimeout,
)
from providers.rate_limits import rate_limit_signal
from providers.transport.h1_response import H1Response
from providers.transport.upstream_errors import UpstreamErrors


class Body(Protocol):
    async def readany(self) -> bytes: ...
    async def read(self, n: int = -1) -> bytes: ...
    def iter_any(self) -> AsyncIterator[bytes]: ...
    def at_eof(self) -> bool: ...


class RawResponse(Protocol):
    """What the transport reads of an answer: aiohttp's `ClientResponse` or an `H1Response`."""

    @property
    def status(self) -> int: ...
    @property
    def headers(self) -> Mapping[str, str]: ...
    @property
    def content(self) -> Body: ...
    @property
    def content_length(self) -> int | None: ...
    async def read(self) -> bytes: ...
    def release(self) -> None: ...
    def close(self) -> None: ...


class HttpStream:
    """An upstream stream past its first bytes: the rest as they come, watched for stalls."""

    def __init__(
        self,
        name: str,
        errors: UpstreamErrors,
        response: RawResponse,
        first_chunk: bytes,
        gap_s: float,
        max_bytes: int,
    ) -> None:
        self.name = name
        self.errors = errors
        self.response = response
        self.gap_s = gap_s
        self.max_bytes = max_bytes
        self.first_chunk = first_chunk
        self.content_type = content_type(response)
        self.rate_limit = rate_limit_signal(response.headers)

    async def rest(self) -> AsyncIterator[bytes]:
        content = self.response.content
        watchdog = _StallWatchdog(self.gap_s, self.response.close)
        size = len(self.first_chunk)
        try:
            with self.errors:
                while True:
                    watchdog.waiting()
                    chunk = await content.readany()
                    watchdog.idle()
                    if not chunk:
                        break
                    size += len(chunk)
                    if size > self.max_bytes:
                        self.response.close()
                        raise too_large(self.name, "stream", self.max_bytes)
                    yield chunk
        except UpstreamError:
            if not watchdog.fired:
                raise
        finally:
            watchdog.cancel()
        if watchdog.fired:
            raise self.stalled()

    @property
    def can_pipe(self) -> bool:
        response = self.response
        return isinstance(response, H1Response) and response.pipeable

    def pipe(self, sink: StreamSink) -> StreamValve:
        response = self.response
        if not isinstance(response, H1Response):
            raise TypeError("only the plain-HTTP client's streams are piped")
        piped = _PipedBody(self, response, sink)
        response.pipe(piped)
        return piped

    def stalled(self) -> UpstreamTimeout:
        return UpstreamTimeout(
            f"backend {self.name} stalled for {self.gap_s:g}s mid-stream", backend=self.name
        )

    async def aclose(self) -> None:
        # Closing (not releasing) drops the connection, which is what stops an
        # unfinished generation upstream.
        if self.response.content.at_eof():
            self.response.release()
        else:
            self.response.close()


class _PipedBody:
    """A piped stream between the connection and the sink: the size bound, the stall
    watchdog (counting only time spent waiting for the backend, not paused for the
    reader), and the transport's failures as UpstreamErrors."""

    __slots__ = (
        "_ended",
        "_max_bytes",
        "_now",
        "_paused",
        "_response",
        "_sink",
        "_size",
        "_stream",
        "_watchdog",
    )

    def __init__(self, stream: HttpStream, response: H1Response, sink: StreamSink) -> None:
        self._stream = stream
        self._response = response
        self._sink = sink
        self._size = len(stream.first_chunk)
        self._max_bytes = stream.max_bytes
        self._ended = False
        self._paused = False
        """Paused for the reader: pieces of a read already taken still come, and must not
        restart the watchdog."""
        self._watchdog = watchdog = _StallWatchdog(stream.gap_s, response.close)
        self._now = asyncio.get_running_loop().time
        watchdog.since = self._now()

    def data(self, chunk: bytes) -> None:
        # Per chunk: kept short, it runs from the connection's callback for every piece.
        if self._ended:
            return
        self._size += len(chunk)
        if self._size > self._max_bytes:
            stream = self._stream
            self.end(too_large(stream.name, "stream", stream.max_bytes))
            self._response.close()
            return
        if not self._paused:
            self._watchdog.since = self._now()  # the next gap starts now
        self._sink.data(chunk)

    def end(self, error: BaseException | None) -> None:
        if self._ended:
            return
        self._ended = True
        watchdog = self._watchdog
        watchdog.cancel()
        if watchdog.fired:
            self._sink.end(self._stream.stalled())
        elif error is None or isinstance(error, UpstreamError):
            self._sink.end(error)
        else:
            self._sink.end(self._mapped(error))

    def pause(self) -> None:
        if not self._ended:
            self._paused = True
            self._watchdog.since = None
            self._response.pause_reading()

    def resume(self) -> None:
        if not self._ended:
            self._paused = False
            self._watchdog.since = self._now()
            self._response.resume_reading()

    def _mapped(self, error: BaseException) -> UpstreamError:
        mapped = self._stream.errors.mapped(error)
        if mapped is not None:
            return mapped
        name = self._stream.name
        return UpstreamProtocolError(
            f"backend {name} broke the stream: {type(error).__name__}", backend=name
        )


class _StallWatchdog:
    """Closes the response if one read waits longer than `gap_s`.

    One timer per stream that re-arms itself only when it fires, instead of a timeout
    armed and cancelled around every read; time spent waiting for a slow client does not
    count, only time spent waiting for the backend.
    """

    def __init__(self, gap_s: float, on_stall: Callable[[], None]) -> None:
        self._loop = asyncio.get_running_loop()
        self._gap_s = gap_s
        self._on_stall = on_stall
        self.since: float | None = None
        """When the wait for the backend began (the loop's clock); None: not waiting."""
        self.fired = False
        self._handle = self._loop.call_later(gap_s, self._check)

    def waiting(self) -> None:
        self.since = self._loop.time()

    def idle(self) -> None:
        self.since = None

    def cancel(self) -> None:
        self._handle.cancel()

    def _check(self) -> None:
        waited = 0.0 if self.since is None else self._loop.time() - self.since
        if waited >= self._gap_s:
            self.fired = True
            self._on_stall()
            return
        self._handle = self._loop.call_later(self._gap_s - waited, self._check)


def too_large(name: str, what: str, max_bytes: int) -> UpstreamResponseTooLarge:
    return UpstreamResponseTooLarge(
        f"backend {name}'s {what} passed the limit of {max_bytes} bytes", backend=name
    )


def content_type(response: RawResponse) -> str:
    return response.headers.get("content-type", "application/json")
