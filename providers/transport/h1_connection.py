"""One keep-alive HTTP/1.1 connection of `providers.transport.h1_client`'s pool, and the client's
errors: the response being read on the connection, event by event from httptools' parser,
with its body buffered until read (reading pauses above 256 KiB unread), or handed to a
`BodySink` as it arrives once the response is piped."""

from __future__ import annotations

import asyncio
from typing import Protocol, cast

import httptools

_READ_HIGH_WATER = 256 * 1024
"""Unread body bytes above which the connection stops reading until the reader catches up."""


class H1ConnectError(OSError):
    """No connection to the backend."""


class H1ConnectTimeout(TimeoutError):
    """Connecting took longer than its deadline."""


class H1ProtocolError(OSError):
    """The connection broke, or the answer is not HTTP/1.1."""


class BodySink(Protocol):
    """Where a piped response's body goes, from the connection's callbacks."""

    def data(self, chunk: bytes) -> None:
        """Body bytes as they arrived."""
        ...

    def end(self, error: BaseException | None) -> None:
        """The body ended (None) or broke; called once, and nothing comes after it."""
        ...


class H1Connection(asyncio.Protocol):
    """One connection and the response being read on it (httptools calls the `on_*`)."""

    def __init__(self, loop: asyncio.AbstractEventLoop, address: tuple[str, int]) -> None:
        self._loop = loop
        self.address = address
        """(host, port) as the URL named them: the pool's key."""
        self.transport: asyncio.Transport | None = None
        self.closed = False
        self.busy = False
        """A request is out on it; anything arriving while it is not is a protocol breach."""
        self.idle_since = 0.0
        self._waiter: asyncio.Future[None] | None = None
        self.reset()

    def reset(self) -> None:
        """Ready for the next response."""
        self._parser = httptools.HttpResponseParser(self)
        self.status = 0
        self.headers: dict[str, str] = {}
        self.headers_done = False
        self._interim = False
        self.complete = False
        self.keep_alive = False
        self.error: BaseException | None = None
        self._body: list[bytes] = []
        self._buffered = 0
        self._paused = False
        self._sink: BodySink | None = None

    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        self.transport = cast(asyncio.Transport, transport)  # uvloop's: not a subclass

    def data_received(self, data: bytes) -> None:
        if not self.busy:
            # Bytes on an idle connection (a server's 408 before it closes, say) would be
            # read as the next request's answer: drop the connection instead.
            self.abort()
            return
        try:
            self._parser.feed_data(data)
        except httptools.HttpParserError as exc:
            self.fail(H1ProtocolError(f"malformed HTTP response: {exc}"))
            self.abort()

    def connection_lost(self, exc: Exception | None) -> None:
        self.closed = True
        if self.complete:
            return
        if self.headers_done and self._until_close():
            self.complete = True
            self._wake()
            self._end_sink(None)
        else:
            self.fail(H1ProtocolError("the connection closed before the response ended"))

    def on_header(self, name: bytes, value: bytes) -> None:
        # The first of a repeated header, as aiohttp's `get` reads it.
        self.headers.setdefault(name.decode("latin-1").lower(), value.decode("latin-1"))

    def on_message_begin(self) -> None:
        if self.complete:
            # More after the answer ended: nothing was asked for it. httptools reports the
            # raise as a parser error, which drops the connection.
            raise H1ProtocolError("the server sent more than one answer")

    def on_headers_complete(self) -> None:
        status = self._parser.get_status_code()
        if 100 <= status < 200:
            self._interim = True  # "100 Continue" and the like: the answer follows
            return
        self.status = status
        self.keep_alive = self._parser.should_keep_alive()
        self.headers_done = True
        self._wake()

    def on_body(self, body: bytes) -> None:
        if self._sink is not None:
            self._sink.data(body)
            return
        self._body.append(body)
        self._buffered += len(body)
        if self._buffered > _READ_HIGH_WATER and not self._paused and self.transport is not None:
            self._paused = True
            self.transport.pause_reading()
        self._wake()

    def on_message_complete(self) -> None:
        if self._interim:
            self._interim = False
            self.headers.clear()
            return
        self.complete = True
        self._wake()
        self._end_sink(None)

    def fail(self, error: BaseException) -> None:
        if self.error is None:
            self.error = error
        self._wake()
        self._end_sink(self.error)

    def pipe(self, sink: BodySink) -> None:
        """From now on hand the body to `sink` as it arrives instead of buffering it: what
        is buffered first, then each piece from the parser's callback, then the end."""
        if self._body:
            sink.data(self._take())
        if self.complete or self.error is not None:
            sink.end(None if self.complete else self.error)
            return
        self._sink = sink

    def pause_reading(self) -> None:
        """Stop reading the socket (a piped body's reader cannot keep up)."""
        if self.transport is not None and not self.closed:
            self.transport.pause_reading()

    def resume_reading(self) -> None:
        if self.transport is not None and not self.closed:
            self.transport.resume_reading()

    def _end_sink(self, error: BaseException | None) -> None:
        sink, self._sink = self._sink, None
        if sink is not None:
            sink.end(error)

    def abort(self) -> None:
        """Drop the connection now (a reader waiting on it gets an error)."""
        self.closed = True
        if self.transport is not None:
            self.transport.abort()
        if not self.complete:
            self.fail(H1ProtocolError("the response was closed before it ended"))

    @property
    def drained(self) -> bool:
        """The body has ended and all of it was read."""
        return self.complete and not self._body

    @property
    def reusable(self) -> bool:
        return self.drained and self.keep_alive and not self.closed

    async def headers_received(self) -> None:
        while not self.headers_done:
            await self._next_event()

    async def readany(self) -> bytes:
        """What body bytes have come; b"" once the body has ended."""
        while True:
            if self._body:
                return self._take()
            if self.complete:
                return b""
            await self._next_event()

    def _take(self) -> bytes:
        body = self._body
        data = body[0] if len(body) == 1 else b"".join(body)
        body.clear()
        self._buffered = 0
        if self._paused and self.transport is not None:
            self._paused = False
            self.transport.resume_reading()
        return data

    async def _next_event(self) -> None:
        if self.error is not None:
            raise self.error
        self._waiter = waiter = self._loop.create_future()
        try:
            await waiter
        finally:
            self._waiter = None
        if self.error is not None and not self._body:
            raise self.error

    def _wake(self) -> None:
        waiter = self._waiter
        if waiter is not None and not waiter.done():
            waiter.set_result(None)

    def _until_close(self) -> bool:
        chunked = "chunked" in self.headers.get("transfer-encoding", "").lower()
        return "content-length" not in self.headers and not chunked
