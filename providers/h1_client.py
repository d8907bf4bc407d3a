"""A lean HTTP/1.1 client for plain-HTTP backends: one keep-alive pool per backend.

The proxy path's upstream exchange is a POST with a body, then a whole answer or a stream
read as it comes. aiohttp's client spends ~185 µs of CPU on one such exchange against the
emulator at 64 in flight, a bare keep-alive client ~85 µs (same process, interleaved,
docs/benchmarks.md); this one is that bare client made whole, on httptools' C parser and an
asyncio protocol: keep-alive reuse (LIFO, idle connections dropped after
`idle_keepalive_s`), at most `max_connections` open at once (later requests wait for a
slot), content-length, chunked and read-until-close bodies, gzip and deflate decoded
(never asked for), reading paused while 256 KiB wait unread.

`HttpTransport` sends `http://` requests through it; `https://`, redirects and health probes
stay on aiohttp. Its failures are `H1ConnectError` / `H1ConnectTimeout` (connecting) and
`H1ProtocolError` (a broken connection or response), which the transport maps with
aiohttp's.
"""

from __future__ import annotations

import asyncio
import contextlib
import time
import zlib
from collections.abc import AsyncIterator, Mapping
from typing import cast
from urllib.parse import urlsplit

import httptools

_READ_HIGH_WATER = 256 * 1024
"""Unread body bytes above which the connection stops reading until the reader catches up."""
_MAX_TARGETS = 256
"""Request heads kept rendered, by URL (a backend has a few paths)."""


class H1ConnectError(OSError):
    """No connection to the backend."""


class H1ConnectTimeout(TimeoutError):
    """Connecting took longer than its deadline."""


class H1ProtocolError(OSError):
    """The connection broke, or the answer is not HTTP/1.1."""


class _Connection(asyncio.Protocol):
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

    def fail(self, error: BaseException) -> None:
        if self.error is None:
            self.error = error
        self._wake()

    def abort(self) -> None:
        """Drop the connection now (a reader waiting on it gets an error)."""
        self.closed = True
        if self.transport is not None:
            self.transport.abort()
        if not self.complete:
            self.fail(H1ProtocolError("the response was closed before it ended"))

    @property
    def reusable(self) -> bool:
        return self.complete and self.keep_alive and not self.closed and not self._body

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


class H1Response:
    """One answer, read as aiohttp's `ClientResponse` is (`content.readany()`, `read()`,
    `release()`, `close()`), the subset `HttpTransport` uses."""

    def __init__(self, pool: H1Pool, connection: _Connection) -> None:
        self._pool = pool
        self._connection = connection
        self._ended = False
        self.status = connection.status
        self.headers: Mapping[str, str] = connection.headers
        self.content = self
        self._encoding = connection.headers.get("content-encoding", "identity").strip().lower()
        self._encoded = self._encoding not in ("identity", "")
        self._decoder: zlib._Decompress | None = None

    @property
    def content_length(self) -> int | None:
        """The declared body length, None when unknown or compressed (so that a reader
        counts what it decodes)."""
        value = self.headers.get("content-length")
        if value is None or self._encoded or not value.strip().isdigit():
            return None
        return int(value)

    async def readany(self) -> bytes:
        while True:
            raw = await self._connection.readany()
            if not self._encoded:
                return raw
            if not raw:
                return self._flush()
            if self._decoder is None:
                self._decoder = _decoder(self._encoding, raw)
            try:
                data = self._decoder.decompress(raw)
            except zlib.error as exc:
                raise H1ProtocolError(f"undecodable compressed body: {exc}") from None
            if data:
                return data

    def _flush(self) -> bytes:
        """The decoded tail once the body has ended; b"" after that."""
        decoder, self._decoder = self._decoder, None
        if decoder is None:
            return b""
        tail = decoder.flush()
        if not decoder.eof:
            raise H1ProtocolError("the compressed body ended before its end")
        return tail

    async def read(self, n: int = -1) -> bytes:
        """The whole body; with n ≥ 0, as aiohttp's reader: what has come (waiting for
        something, b"" at the end), at most `n` bytes of it, the rest dropped."""
        if n >= 0:
            return (await self.readany())[:n]
        parts: list[bytes] = []
        while chunk := await self.readany():
            parts.append(chunk)
        return b"".join(parts)

    async def iter_any(self) -> AsyncIterator[bytes]:
        while chunk := await self.readany():
            yield chunk

    def at_eof(self) -> bool:
        connection = self._connection
        return connection.complete and not connection._body

    def release(self) -> None:
        """Done with it: the connection goes back to the pool if the body was read to its
        end, else it is closed."""
        if not self._ended:
            self._ended = True
            self._pool.give_back(self._connection)

    def close(self) -> None:
        """Done with it, closing the connection whatever was left unread."""
        if not self._ended:
            self._ended = True
            self._connection.abort()
            self._pool.give_back(self._connection)

    def __del__(self) -> None:
        # A response dropped unclosed (a caller's bug) must not keep its slot for good.
        if not self._ended:
            self._ended = True
            with contextlib.suppress(Exception):
                self._connection.abort()
                self._pool.give_back(self._connection)


def _decoder(encoding: str, first: bytes) -> zlib._Decompress:
    """The decoder for `encoding`, by the body's `first` bytes where the encoding leaves
    the framing open (deflate: zlib-wrapped as the RFC says, or raw as some servers send)."""
    if encoding in ("gzip", "x-gzip"):
        return zlib.decompressobj(wbits=16 + zlib.MAX_WBITS)
    if encoding == "deflate":
        # A zlib header: method 8 and a check over its two bytes (one byte: assume it).
        wrapped = first[0] & 0x0F == 8 and (len(first) < 2 or (first[0] << 8 | first[1]) % 31 == 0)
        return zlib.decompressobj(wbits=zlib.MAX_WBITS if wrapped else -zlib.MAX_WBITS)
    raise H1ProtocolError(f"unsupported content-encoding {encoding!r}")


class H1Pool:
    """Keep-alive connections to one backend's `http://` URLs, sending `headers` with every
    request."""

    def __init__(
        self, headers: Mapping[str, str], *, max_connections: int, idle_keepalive_s: float
    ) -> None:
        self._header_lines = b"".join(
            f"{name}: {value}\r\n".encode("latin-1")
            for name, value in headers.items()
            if name.lower() not in ("host", "content-length", "transfer-encoding")
        )
        self._idle_keepalive_s = idle_keepalive_s
        self._slots = asyncio.Semaphore(max_connections)
        self._idle: dict[tuple[str, int], list[_Connection]] = {}
        self._targets: dict[str, tuple[tuple[str, int], bytes]] = {}
        self._closed = False

    async def post(self, url: str, body: bytes, connect_s: float) -> H1Response:
        """Send a POST and wait for the answer's status and headers (the caller bounds how
        long); the answer's body is read from the response."""
        address, head = self._target(url)
        await self._slots.acquire()
        connection: _Connection | None = None
        try:
            connection = self._reuse(address) or await self._connect(address, connect_s)
            connection.busy = True
            transport = connection.transport
            assert transport is not None
            transport.writelines((head, b"%d\r\n\r\n" % len(body), body))
            await connection.headers_received()
            return H1Response(self, connection)
        except BaseException:
            if connection is not None:
                connection.busy = False
                connection.abort()
            self._slots.release()
            raise

    def give_back(self, connection: _Connection) -> None:
        """A response is done with `connection`: keep it for the next request if it can
        carry one, and free its slot."""
        self._slots.release()
        connection.busy = False
        if not connection.reusable or self._closed:
            connection.abort()
            return
        connection.idle_since = time.monotonic()
        connection.reset()
        self._idle.setdefault(connection.address, []).append(connection)

    async def close(self) -> None:
        """Close the idle connections; those in use close when their answers are done."""
        self._closed = True
        for connections in self._idle.values():
            for connection in connections:
                connection.abort()
        self._idle.clear()

    def _reuse(self, address: tuple[str, int]) -> _Connection | None:
        idle = self._idle.get(address)
        now = time.monotonic()
        while idle:
            connection = idle.pop()
            if not connection.closed and now - connection.idle_since < self._idle_keepalive_s:
                return connection
            connection.abort()
        return None

    async def _connect(self, address: tuple[str, int], connect_s: float) -> _Connection:
        loop = asyncio.get_running_loop()
        try:
            async with asyncio.timeout(connect_s):
                _, connection = await loop.create_connection(
                    lambda: _Connection(loop, address), address[0], address[1]
                )
        except TimeoutError:
            raise H1ConnectTimeout(f"connecting took over {connect_s:g}s") from None
        except OSError as exc:
            raise H1ConnectError(exc.strerror or type(exc).__name__) from None
        return connection

    def _target(self, url: str) -> tuple[tuple[str, int], bytes]:
        """Where `url` goes and the request head up to the content length's value."""
        found = self._targets.get(url)
        if found is not None:
            return found
        parts = urlsplit(url)
        if parts.scheme != "http" or not parts.hostname:
            raise ValueError(f"not a plain-HTTP URL: {url}")
        port = parts.port or 80
        host = parts.hostname if parts.port is None else f"{parts.hostname}:{port}"
        if ":" in parts.hostname:  # an IPv6 literal keeps its brackets in Host
            host = f"[{parts.hostname}]" if parts.port is None else f"[{parts.hostname}]:{port}"
        target = (parts.path or "/") + (f"?{parts.query}" if parts.query else "")
        head = (
            f"POST {target} HTTP/1.1\r\nhost: {host}\r\n".encode("latin-1")
            + self._header_lines
            + b"content-length: "
        )
        if len(self._targets) >= _MAX_TARGETS:
            self._targets.clear()
        self._targets[url] = found = ((parts.hostname, port), head)
        return found
