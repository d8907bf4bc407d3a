"""One answer read from an `H1Connection`, as aiohttp's `ClientResponse` is read (the subset
`HttpTransport` uses), with gzip and deflate bodies decoded."""

from __future__ import annotations

import contextlib
import zlib
from collections.abc import AsyncIterator, Mapping
from typing import TYPE_CHECKING

from providers.transport.h1_connection import BodySink, H1Connection, H1ProtocolError

if TYPE_CHECKING:
    from providers.transport.h1_client import H1Pool


class H1Response:
    """One answer, read as aiohttp's `ClientResponse` is (`content.readany()`, `read()`,
    `release()`, `close()`), the subset `HttpTransport` uses."""

    def __init__(self, pool: H1Pool, connection: H1Connection) -> None:
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

    @property
    def pipeable(self) -> bool:
        """The body can be piped: it comes as sent (not compressed)."""
        return not self._encoded

    def pipe(self, sink: BodySink) -> None:
        """Hand the rest of the body to `sink` as it arrives (`H1Connection.pipe`); only
        when `pipeable`."""
        if self._encoded:
            raise ValueError("a compressed body is read, not piped")
        self._connection.pipe(sink)

    def pause_reading(self) -> None:
        self._connection.pause_reading()

    def resume_reading(self) -> None:
        self._connection.resume_reading()

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
        return self._connection.drained

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
