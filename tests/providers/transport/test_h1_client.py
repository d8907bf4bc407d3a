"""The lean HTTP/1.1 client against raw loopback servers that answer exactly as scripted."""

from __future__ import annotations

import asyncio
import base64
import gzip
import socket
import zlib
from collections.abc import AsyncIterator, Awaitable, Callable

import pytest

from providers.transport.h1_client import H1ConnectError, H1ConnectTimeout, H1Pool, H1ProtocolError
from tests.conftest import eventually

Answer = Callable[[bytes], Awaitable[list[bytes]]]
"""Given one request's bytes, the pieces to write back (b"" piece: close the connection)."""


Handler = Callable[[asyncio.StreamReader, asyncio.StreamWriter], Awaitable[None]]
"""What a server does with one connection."""


class RawServer:
    """A loopback server that runs `handler` on each connection it accepts."""

    def __init__(self, handler: Handler) -> None:
        self.handler = handler
        self.connections = 0
        self.requests: list[bytes] = []
        self._server: asyncio.Server | None = None

    @property
    def url(self) -> str:
        assert self._server is not None
        port = self._server.sockets[0].getsockname()[1]
        return f"http://127.0.0.1:{port}/v1/x"

    async def start(self) -> None:
        self._server = await asyncio.start_server(self._serve, "127.0.0.1", 0)

    async def stop(self) -> None:
        assert self._server is not None
        self._server.close()
        await self._server.wait_closed()

    async def __aenter__(self) -> str:
        await self.start()
        return self.url

    async def __aexit__(self, *_: object) -> None:
        await self.stop()

    async def _serve(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        self.connections += 1
        try:
            await self.handler(reader, writer)
        except (asyncio.IncompleteReadError, ConnectionError):
            pass
        finally:
            writer.close()


async def read_request(reader: asyncio.StreamReader) -> bytes:
    """One request's head and body."""
    head = await reader.readuntil(b"\r\n\r\n")
    length = int(head.lower().split(b"content-length: ")[1].split(b"\r\n")[0])
    return head + await reader.readexactly(length)


def fixed(*pieces: bytes) -> Answer:
    async def answer(_: bytes) -> list[bytes]:
        return list(pieces)

    return answer


def ok(body: bytes, *extra: str) -> bytes:
    headers = "".join(f"{line}\r\n" for line in extra)
    return f"HTTP/1.1 200 OK\r\ncontent-length: {len(body)}\r\n{headers}\r\n".encode() + body


@pytest.fixture
async def pool() -> AsyncIterator[H1Pool]:
    opened = H1Pool({"authorization": "Bearer k"}, max_connections=4, idle_keepalive_s=5.0)
    try:
        yield opened
    finally:
        await opened.close()


async def serve(answer: Answer) -> RawServer:
    """A started server that reads request after request and writes `answer`'s pieces
    to each (b"": close the connection)."""

    async def answering(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        while True:
            request = await read_request(reader)
            server.requests.append(request)
            for piece in await answer(request):
                if not piece:
                    return
                writer.write(piece)
                await writer.drain()

    server = RawServer(answering)
    await server.start()
    return server


async def test_sequential_requests_share_one_kept_alive_connection(pool: H1Pool) -> None:
    server = await serve(fixed(ok(b'{"n": 1}', "content-type: application/json")))
    try:
        for _ in range(3):
            response = await pool.post(server.url, b'{"q": 1}', 2.0)
            assert response.status == 200
            assert response.headers["content-type"] == "application/json"
            assert await response.read() == b'{"n": 1}'
            response.release()
        assert server.connections == 1
        first = server.requests[0]
        assert first.startswith(b"POST /v1/x HTTP/1.1\r\n")
        assert b"authorization: Bearer k\r\n" in first and first.endswith(b'{"q": 1}')
    finally:
        await server.stop()


async def test_connection_close_and_unread_bodies_are_not_reused(pool: H1Pool) -> None:
    server = await serve(fixed(ok(b"bye", "connection: close")))
    try:
        for _ in range(2):
            response = await pool.post(server.url, b"{}", 2.0)
            assert await response.read() == b"bye"
            response.release()
        assert server.connections == 2
    finally:
        await server.stop()
    server = await serve(fixed(ok(b"x" * 2_000_000)))  # more than is read ahead
    try:
        response = await pool.post(server.url, b"{}", 2.0)
        assert len(await response.read(10)) == 10
        response.release()  # the rest unread: this connection cannot carry another answer
        response = await pool.post(server.url, b"{}", 2.0)
        assert len(await response.read()) == 2_000_000
        response.release()
        assert server.connections == 2
    finally:
        await server.stop()


async def test_chunked_until_close_and_gzip_bodies(pool: H1Pool) -> None:
    chunked = (
        b"HTTP/1.1 200 OK\r\ntransfer-encoding: chunked\r\n\r\n3\r\nabc\r\n2\r\nde\r\n0\r\n\r\n"
    )
    packed = gzip.compress(b"hello " * 1000)
    zipped = ok(packed, "content-encoding: gzip")
    until_close = [b"HTTP/1.1 200 OK\r\nconnection: close\r\n\r\nall of it", b""]
    for pieces, expected in (
        ([chunked], b"abcde"),
        ([zipped], b"hello " * 1000),
        (until_close, b"all of it"),
    ):
        server = await serve(fixed(*pieces))
        try:
            response = await pool.post(server.url, b"{}", 2.0)
            assert await response.read() == expected
            assert response.content_length is None or response.content_length == len(expected)
            assert response.at_eof()
            response.release()
        finally:
            await server.stop()


async def test_an_interim_answer_is_skipped(pool: H1Pool) -> None:
    server = await serve(fixed(b"HTTP/1.1 100 Continue\r\n\r\n", ok(b'{"n": 1}')))
    try:
        response = await pool.post(server.url, b"{}", 2.0)
        assert response.status == 200 and await response.read() == b'{"n": 1}'
        response.release()
    finally:
        await server.stop()


async def test_a_stream_is_read_as_it_comes(pool: H1Pool) -> None:
    async def answer(_: bytes) -> list[bytes]:
        return [b"HTTP/1.1 200 OK\r\ntransfer-encoding: chunked\r\n\r\n6\r\nfirst\n\r\n"]

    server = await serve(answer)
    try:
        response = await pool.post(server.url, b"{}", 2.0)
        assert await response.content.readany() == b"first\n"
        reading = asyncio.ensure_future(response.content.readany())
        for _ in range(5):  # loop turns: the read is waiting, not done
            await asyncio.sleep(0)
        assert not reading.done(), "nothing more has come"
        response.close()  # e.g. the stall watchdog: the waiting read fails at once
        with pytest.raises(H1ProtocolError):
            await reading
    finally:
        await server.stop()


async def test_a_body_cut_short_is_an_error_not_an_end(pool: H1Pool) -> None:
    server = await serve(fixed(b"HTTP/1.1 200 OK\r\ncontent-length: 100\r\n\r\nonly this", b""))
    try:
        response = await pool.post(server.url, b"{}", 2.0)
        with pytest.raises(H1ProtocolError, match="closed before the response ended"):
            await response.read()
        response.close()
    finally:
        await server.stop()


async def test_malformed_answers_and_failed_connections(pool: H1Pool) -> None:
    server = await serve(fixed(b"SMTP ready\r\n\r\n"))
    url = server.url
    try:
        with pytest.raises(H1ProtocolError, match="malformed"):
            await pool.post(url, b"{}", 2.0)
    finally:
        await server.stop()
    # Nothing listens there any more.
    with pytest.raises(H1ConnectError):
        await pool.post(url, b"{}", 2.0)


async def test_a_connection_that_does_not_open_in_time(pool: H1Pool) -> None:
    # A listener that accepts nothing, its backlog filled: the kernel drops further SYNs.
    listener = socket.socket()
    listener.bind(("127.0.0.1", 0))
    listener.listen(0)
    port = listener.getsockname()[1]
    fillers = []
    try:
        for _ in range(3):
            filler = socket.socket()
            filler.setblocking(False)
            filler.connect_ex(("127.0.0.1", port))
            fillers.append(filler)
        with pytest.raises(H1ConnectTimeout):
            await pool.post(f"http://127.0.0.1:{port}/v1/x", b"{}", 0.2)
    finally:
        for filler in fillers:
            filler.close()
        listener.close()


async def test_at_most_max_connections_are_open_at_once() -> None:
    release = asyncio.Event()
    in_flight = 0
    peak = 0

    async def answer(_: bytes) -> list[bytes]:
        nonlocal in_flight, peak
        in_flight += 1
        peak = max(peak, in_flight)
        await release.wait()
        in_flight -= 1
        return [ok(b"{}")]

    server = await serve(answer)
    pool = H1Pool({}, max_connections=2, idle_keepalive_s=5.0)

    async def one() -> bytes:
        response = await pool.post(server.url, b"{}", 2.0)
        body = await response.read()
        response.release()
        return body

    async def two_answering() -> bool:
        return in_flight == 2

    try:
        calls = [asyncio.ensure_future(one()) for _ in range(5)]
        await eventually(two_answering, "two requests at the server")
        assert peak == 2 and server.connections == 2
        release.set()
        assert await asyncio.gather(*calls) == [b"{}"] * 5
        assert server.connections == 2, "the waiting requests took the freed connections"
    finally:
        await pool.close()
        await server.stop()


@pytest.mark.parametrize(
    ("idle_s", "connections"),
    [(4.0, 1), (5.0, 2)],
    ids=["reused-within-its-keepalive", "dropped-at-its-keepalive"],
)
async def test_idle_connections_past_their_keepalive_are_not_reused(
    idle_s: float, connections: int
) -> None:
    server = await serve(fixed(ok(b"{}")))
    now = [100.0]
    pool = H1Pool({}, max_connections=2, idle_keepalive_s=5.0, clock=lambda: now[0])
    try:
        for _ in range(2):
            response = await pool.post(server.url, b"{}", 2.0)
            await response.read()
            response.release()
            now[0] += idle_s
        assert server.connections == connections
    finally:
        await pool.close()
        await server.stop()


def test_only_plain_http_urls() -> None:
    pool = H1Pool({}, max_connections=1, idle_keepalive_s=1.0)
    with pytest.raises(ValueError, match="not a plain-HTTP URL") as refused:
        asyncio.run(pool.post("https://user:s3cret@api.example.com/v1/x", b"{}", 1.0))
    assert "s3cret" not in str(refused.value)


async def test_a_urls_credentials_are_sent_as_basic_auth() -> None:
    server = await serve(fixed(ok(b"{}"), ok(b"{}")))
    url = server.url.replace("http://", "http://user%40x:p%3Ass@")
    try:
        for headers in ({}, {"authorization": "Bearer own"}):
            pool = H1Pool(headers, max_connections=1, idle_keepalive_s=1.0)
            try:
                response = await pool.post(url, b"{}", 2.0)
                await response.read()
                response.release()
            finally:
                await pool.close()
        first, second = server.requests
        token = base64.b64encode(b"user@x:p:ss").decode()
        assert f"authorization: Basic {token}\r\n".encode() in first
        assert b"Basic" not in second and b"authorization: Bearer own\r\n" in second
    finally:
        await server.stop()


async def test_bytes_on_an_idle_connection_do_not_become_the_next_answer(pool: H1Pool) -> None:
    idle, dropped = asyncio.Event(), asyncio.Event()

    async def handler(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        await read_request(reader)
        writer.write(ok(b"first"))
        await idle.wait()  # the client has the answer: the connection is idle in its pool
        writer.write(b"HTTP/1.1 408 Request Timeout\r\ncontent-length: 7\r\n\r\ntimeout")
        try:
            await read_request(reader)  # never comes: the client dropped this connection
        except asyncio.IncompleteReadError:
            dropped.set()
            raise
        writer.write(ok(b"stale"))

    async def fresh(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        if server.connections == 1:
            await handler(reader, writer)
            return
        await read_request(reader)
        writer.write(ok(b"second"))
        await writer.drain()

    server = RawServer(fresh)
    async with server as url:
        response = await pool.post(url, b"{}", 2.0)
        assert await response.read() == b"first"
        response.release()
        idle.set()
        await asyncio.wait_for(dropped.wait(), 5)
        response = await pool.post(url, b"{}", 2.0)
        assert (response.status, await response.read()) == (200, b"second")
        response.release()
        assert server.connections == 2


async def test_a_second_answer_after_the_first_is_not_merged_into_it(pool: H1Pool) -> None:
    async def handler(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        await read_request(reader)
        extra = b"HTTP/1.1 200 OK\r\ncontent-type: text/html\r\ncontent-length: 5\r\n\r\nextra"
        writer.write(ok(b"first", "content-type: application/json") + extra)
        await reader.read()  # open until the client drops it

    server = RawServer(handler)
    async with server as url:
        response = await pool.post(url, b"{}", 2.0)
        assert response.headers["content-type"] == "application/json"
        assert await response.read() == b"first"
        response.release()
        response = await pool.post(url, b"{}", 2.0)  # that connection was dropped
        assert await response.read() == b"first"
        response.release()
        assert server.connections == 2


async def test_encodings_raw_deflate_truncated_and_unknown() -> None:
    body = b"hello " * 500
    raw = zlib.compressobj(wbits=-zlib.MAX_WBITS)
    raw_deflate = raw.compress(body) + raw.flush()
    cut_gzip = gzip.compress(body)[:-12]
    pool = H1Pool({}, max_connections=1, idle_keepalive_s=5.0)
    try:
        for payload, encoding, expected in (
            (zlib.compress(body), "deflate", body),
            (raw_deflate, "deflate", body),
            (cut_gzip, "gzip", None),
            (b"\x00\x01", "br", None),
        ):
            server = await serve(fixed(ok(payload, f"content-encoding: {encoding}")))
            try:
                response = await pool.post(server.url, b"{}", 2.0)
                if expected is None:
                    with pytest.raises(H1ProtocolError):
                        await response.read()
                    response.close()
                else:
                    assert await response.read() == expected
                    response.release()
            finally:
                await server.stop()
        # One slot: had a failed answer kept it, this would wait for ever.
        server = await serve(fixed(ok(b"{}")))
        try:
            response = await asyncio.wait_for(pool.post(server.url, b"{}", 2.0), 2.0)
            response.release()
        finally:
            await server.stop()
    finally:
        await pool.close()


async def test_read_n_returns_what_has_come_and_repeated_headers_keep_the_first(
    pool: H1Pool,
) -> None:
    async def handler(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        await read_request(reader)
        head = b"HTTP/1.1 500 Oops\r\nretry-after: 5\r\nretry-after: 5\r\n"
        writer.write(head + b"transfer-encoding: chunked\r\n\r\n5\r\noops!\r\n")
        await reader.read()  # the rest never comes: open until the client closes it

    async with RawServer(handler) as url:
        response = await pool.post(url, b"{}", 2.0)
        assert response.status == 500 and response.headers["retry-after"] == "5"
        assert await asyncio.wait_for(response.content.read(65536), 5) == b"oops!"
        response.close()
