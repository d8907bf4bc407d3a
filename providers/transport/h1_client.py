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
import base64
import time
from collections.abc import Callable, Mapping
from urllib.parse import unquote, urlsplit

from providers.transport.h1_connection import (
    H1ConnectError,
    H1Connection,
    H1ConnectTimeout,
    H1ProtocolError,
)
from providers.transport.h1_response import H1Response

__all__ = ["H1ConnectError", "H1ConnectTimeout", "H1Pool", "H1ProtocolError", "H1Response"]

_MAX_TARGETS = 256
"""Request heads kept rendered, by URL (a backend has a few paths)."""


class H1Pool:
    """Keep-alive connections to one backend's `http://` URLs, sending `headers` with every
    request."""

    def __init__(
        self,
        headers: Mapping[str, str],
        *,
        max_connections: int,
        idle_keepalive_s: float,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self._header_lines = b"".join(
            f"{name}: {value}\r\n".encode("latin-1")
            for name, value in headers.items()
            if name.lower() not in ("host", "content-length", "transfer-encoding")
        )
        self._has_auth = any(name.lower() == "authorization" for name in headers)
        self._idle_keepalive_s = idle_keepalive_s
        self._clock = clock
        self._slots = asyncio.Semaphore(max_connections)
        self._idle: dict[tuple[str, int], list[H1Connection]] = {}
        self._targets: dict[str, tuple[tuple[str, int], bytes]] = {}
        self._closed = False

    async def post(
        self, url: str, body: bytes, connect_s: float, extra: Mapping[str, str] | None = None
    ) -> H1Response:
        """Send a POST and wait for the answer's status and headers (the caller bounds how
        long); the answer's body is read from the response. `extra`: this request's own
        headers, after the pool's."""
        address, head = self._target(url)
        length = _lines(extra) + b"content-length: %d\r\n\r\n" % len(body)
        request = (b"POST", head, length, body)
        return await self._exchange(address, request, connect_s)

    async def get(
        self, url: str, connect_s: float, extra: Mapping[str, str] | None = None
    ) -> H1Response:
        """Send a GET (a health probe's) and wait for the answer's status and headers."""
        address, head = self._target(url)
        return await self._exchange(address, (b"GET", head, _lines(extra) + b"\r\n"), connect_s)

    async def _exchange(
        self, address: tuple[str, int], request: tuple[bytes, ...], connect_s: float
    ) -> H1Response:
        await self._slots.acquire()
        connection: H1Connection | None = None
        try:
            connection = self._reuse(address) or await self._connect(address, connect_s)
            connection.busy = True
            transport = connection.transport
            assert transport is not None
            transport.writelines(request)
            await connection.headers_received()
            return H1Response(self, connection)
        except BaseException:
            if connection is not None:
                connection.busy = False
                connection.abort()
            self._slots.release()
            raise

    def give_back(self, connection: H1Connection) -> None:
        """A response is done with `connection`: keep it for the next request if it can
        carry one, and free its slot."""
        self._slots.release()
        connection.busy = False
        if not connection.reusable or self._closed:
            connection.abort()
            return
        connection.idle_since = self._clock()
        connection.reset()
        self._idle.setdefault(connection.address, []).append(connection)

    async def close(self) -> None:
        """Close the idle connections; those in use close when their answers are done."""
        self._closed = True
        for connections in self._idle.values():
            for connection in connections:
                connection.abort()
        self._idle.clear()

    def _reuse(self, address: tuple[str, int]) -> H1Connection | None:
        idle = self._idle.get(address)
        now = self._clock()
        while idle:
            connection = idle.pop()
            if not connection.closed and now - connection.idle_since < self._idle_keepalive_s:
                return connection
            connection.abort()
        return None

    async def _connect(self, address: tuple[str, int], connect_s: float) -> H1Connection:
        loop = asyncio.get_running_loop()
        try:
            async with asyncio.timeout(connect_s):
                _, connection = await loop.create_connection(
                    lambda: H1Connection(loop, address), address[0], address[1]
                )
        except TimeoutError:
            raise H1ConnectTimeout(f"connecting took over {connect_s:g}s") from None
        except OSError as exc:
            raise H1ConnectError(exc.strerror or type(exc).__name__) from None
        return connection

    def _target(self, url: str) -> tuple[tuple[str, int], bytes]:
        """Where `url` goes and its request head after the method, without the blank line
        that ends it (a POST adds its content length first)."""
        found = self._targets.get(url)
        if found is not None:
            return found
        parts = urlsplit(url)
        if parts.scheme != "http" or not parts.hostname:
            raise ValueError(f"not a plain-HTTP URL with a host (scheme {parts.scheme!r})")
        port = parts.port or 80
        host = parts.hostname if parts.port is None else f"{parts.hostname}:{port}"
        if ":" in parts.hostname:  # an IPv6 literal keeps its brackets in Host
            host = f"[{parts.hostname}]" if parts.port is None else f"[{parts.hostname}]:{port}"
        target = (parts.path or "/") + (f"?{parts.query}" if parts.query else "")
        head = (
            f" {target} HTTP/1.1\r\nhost: {host}\r\n".encode("latin-1")
            + self._header_lines
            + _basic_auth(parts.username, parts.password, self._has_auth)
        )
        if len(self._targets) >= _MAX_TARGETS:
            self._targets.clear()
        self._targets[url] = found = ((parts.hostname, port), head)
        return found


def _basic_auth(username: str | None, password: str | None, has_auth: bool) -> bytes:
    """The Authorization line for a URL's `user:password@`, as aiohttp sends it (latin-1);
    none when the URL has none or the headers carry their own."""
    if username is None or has_auth:
        return b""
    pair = f"{unquote(username)}:{unquote(password or '')}".encode("latin-1")
    return b"authorization: Basic " + base64.b64encode(pair) + b"\r\n"


def _lines(headers: Mapping[str, str] | None) -> bytes:
    """`headers` as header lines; nothing for none."""
    if not headers:
        return b""
    return b"".join(f"{k}: {v}\r\n".encode("latin-1") for k, v in headers.items())
