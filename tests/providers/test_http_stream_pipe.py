"""A piped upstream stream (`HttpStream.pipe`): the lean client hands each piece to a sink
from its connection's callbacks, with the same stall watchdog, size cap and error mapping
as a stream read with `rest()`; pausing stops reading and the watchdog."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator

import pytest

from providers.base import Deadlines, StreamValve, UpstreamStream, pipeable, upstream_headers
from providers.errors import UpstreamProtocolError, UpstreamResponseTooLarge, UpstreamTimeout
from providers.transport.http_stream import _StallWatchdog
from providers.transport.http_transport import HttpTransport
from tests.conftest import eventually
from tests.providers.fake_upstream import Pause, Reply, ScriptedServer


class Sink:
    """Records what a piped stream hands over, and how it ended."""

    def __init__(self) -> None:
        self.chunks: list[bytes] = []
        self.ends: list[Exception | None] = []
        self.ended: asyncio.Future[Exception | None] = asyncio.get_running_loop().create_future()

    def data(self, chunk: bytes) -> None:
        assert not self.ends, "nothing comes after the end"
        self.chunks.append(chunk)

    def end(self, error: Exception | None) -> None:
        self.ends.append(error)
        self.ended.set_result(error)


class WatchdogLooks:
    """Counts the stall watchdog's looks at how long the backend has been waited for."""

    def __init__(self) -> None:
        self.count = 0
        self._looked = asyncio.Event()

    def looked(self) -> None:
        self.count += 1
        self._looked.set()

    async def a_window_passes(self) -> None:
        """Until the watchdog has looked twice more: the second look is a whole stall
        window after now, and it fires there if the backend counts as waited for."""
        target = self.count + 2
        while self.count < target:
            self._looked.clear()
            await asyncio.wait_for(self._looked.wait(), 5)


@pytest.fixture
def watchdog(monkeypatch: pytest.MonkeyPatch) -> WatchdogLooks:
    looks = WatchdogLooks()
    check = _StallWatchdog._check

    def looking(self: _StallWatchdog) -> None:
        check(self)
        looks.looked()

    monkeypatch.setattr(_StallWatchdog, "_check", looking)
    return looks


def _pipe(stream: UpstreamStream, sink: Sink) -> StreamValve:
    piped = pipeable(stream)
    assert piped is not None, "the lean client's plain streams can be piped"
    return piped.pipe(sink)


def _deadlines(*, gap_s: float = 5.0, max_bytes: int = 1 << 20) -> Deadlines:
    return Deadlines(
        connect_s=2.0, first_byte_s=5.0, between_chunks_s=gap_s, max_stream_bytes=max_bytes
    )


@pytest.fixture
async def lean() -> AsyncIterator[HttpTransport]:
    opened = HttpTransport("b", upstream_headers("k"), _never_mapped, secret="k")
    try:
        yield opened
    finally:
        await opened.close()


def _never_mapped(status: int, body: bytes, retry_after: float | None) -> UpstreamProtocolError:
    raise AssertionError("only 200 answers here")


async def test_a_piped_stream_hands_over_every_piece_and_its_end(
    upstream: ScriptedServer, lean: HttpTransport
) -> None:
    pieces = [b"data: 1\n\n", b"data: 2\n\n", b"data: 3\n\n", b"data: [DONE]\n\n"]
    upstream.reply(Reply(body=pieces), Reply(body=b"{}"))
    stream = await lean.open_stream(upstream.url + "/v1/x", b"{}", _deadlines())
    piped = pipeable(stream)
    assert piped is not None
    sink = Sink()
    piped.pipe(sink)
    assert await asyncio.wait_for(sink.ended, 5) is None
    assert stream.first_chunk + b"".join(sink.chunks) == b"".join(pieces)
    assert len(sink.ends) == 1
    await stream.aclose()
    # Read to its end, the connection went back to the pool for the next request.
    answer = await lean.send(upstream.url + "/v1/x", b"{}", _deadlines())
    assert answer.body == b"{}"


async def test_a_stall_ends_a_piped_stream_with_a_timeout(
    upstream: ScriptedServer, lean: HttpTransport
) -> None:
    upstream.reply(Reply(body=[b"data: 1\n\n", b"data: 2\n\n", Pause(1.0), b"data: 3\n\n"]))
    stream = await lean.open_stream(upstream.url + "/v1/x", b"{}", _deadlines(gap_s=0.2))
    sink = Sink()
    _pipe(stream, sink)
    error = await asyncio.wait_for(sink.ended, 5)
    assert isinstance(error, UpstreamTimeout) and "stalled for 0.2s" in error.message
    assert b"data: 3" not in b"".join(sink.chunks)
    await stream.aclose()


async def test_a_paused_stream_is_not_a_stall_and_resumes_where_it_was(
    upstream: ScriptedServer, lean: HttpTransport, watchdog: WatchdogLooks
) -> None:
    pieces = [b"data: %d\n\n" % i for i in range(20)]
    upstream.reply(Reply(body=pieces))
    stream = await lean.open_stream(upstream.url + "/v1/x", b"{}", _deadlines(gap_s=0.2))
    sink = Sink()
    valve = _pipe(stream, sink)
    valve.pause()
    # The server writes it all meanwhile.
    await asyncio.gather(asyncio.wait_for(upstream.played.wait(), 5), watchdog.a_window_passes())
    held = len(sink.chunks)
    assert not sink.ends, "time paused for the reader is not the backend's stall"
    valve.resume()
    assert await asyncio.wait_for(sink.ended, 5) is None
    assert stream.first_chunk + b"".join(sink.chunks) == b"".join(pieces)
    assert held < len(pieces) - 1, "nothing was read while paused"
    await stream.aclose()


async def test_a_piped_stream_ends_in_an_error_at_its_cap(
    upstream: ScriptedServer, lean: HttpTransport
) -> None:
    upstream.reply(Reply(body=[b"data: 1\n\n", Pause(0.05), b"x" * 600, Pause(0.05), b"y" * 600]))
    stream = await lean.open_stream(upstream.url + "/v1/x", b"{}", _deadlines(max_bytes=1000))
    sink = Sink()
    _pipe(stream, sink)
    error = await asyncio.wait_for(sink.ended, 5)
    assert isinstance(error, UpstreamResponseTooLarge)
    assert b"".join(sink.chunks) == b"x" * 600, "nothing past the cap is handed over"
    await stream.aclose()


async def test_a_connection_cut_mid_stream_is_a_protocol_error(lean: HttpTransport) -> None:
    piped = asyncio.Event()

    async def cut(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        await reader.readuntil(b"\r\n\r\n")
        await reader.readexactly(2)
        writer.write(b"HTTP/1.1 200 OK\r\ncontent-type: text/event-stream\r\n")
        writer.write(b"transfer-encoding: chunked\r\n\r\n9\r\ndata: 1\n\n\r\n")
        await writer.drain()
        await piped.wait()
        writer.write(b"9\r\ndata: 2\n\n\r\n")
        await writer.drain()
        writer.close()  # no last chunk: the stream did not end

    server = await asyncio.start_server(cut, "127.0.0.1", 0)
    port = server.sockets[0].getsockname()[1]
    try:
        stream = await lean.open_stream(f"http://127.0.0.1:{port}/v1/x", b"{}", _deadlines())
        sink = Sink()
        _pipe(stream, sink)
        piped.set()
        error = await asyncio.wait_for(sink.ended, 5)
        assert isinstance(error, UpstreamProtocolError) and error.backend == "b"
        assert sink.chunks == [b"data: 2\n\n"]
        await stream.aclose()
    finally:
        server.close()
        await server.wait_closed()


async def test_aiohttp_and_compressed_streams_are_not_piped(upstream: ScriptedServer) -> None:
    via_aiohttp = HttpTransport(
        "b", upstream_headers("k"), _never_mapped, secret="k", http_client="aiohttp"
    )
    try:
        upstream.reply(Reply(body=[b"data: 1\n\n", b"data: [DONE]\n\n"]))
        stream = await via_aiohttp.open_stream(upstream.url + "/v1/x", b"{}", _deadlines())
        assert pipeable(stream) is None
        await stream.aclose()
    finally:
        await via_aiohttp.close()


async def test_pieces_of_a_read_taken_after_a_pause_do_not_restart_the_watchdog(
    lean: HttpTransport, watchdog: WatchdogLooks
) -> None:
    """Paused by the first piece of a read, the rest of that read still comes: time the
    reader then takes is still not the backend's stall."""
    piped, resumed = asyncio.Event(), asyncio.Event()

    async def burst(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        await reader.readuntil(b"\r\n\r\n")
        await reader.readexactly(2)
        head = b"HTTP/1.1 200 OK\r\ncontent-type: text/event-stream\r\n"
        writer.write(head + b"transfer-encoding: chunked\r\n\r\n9\r\ndata: 0\n\n\r\n")
        await writer.drain()
        await piped.wait()  # the client has read that: what follows is a read of its own
        writer.write(b"".join(b"9\r\ndata: %d\n\n\r\n" % i for i in range(1, 6)))  # one read
        await writer.drain()
        await resumed.wait()
        writer.write(b"e\r\ndata: [DONE]\n\n\r\n0\r\n\r\n")
        await writer.drain()

    server = await asyncio.start_server(burst, "127.0.0.1", 0)
    port = server.sockets[0].getsockname()[1]
    try:
        url = f"http://127.0.0.1:{port}/v1/x"
        stream = await lean.open_stream(url, b"{}", _deadlines(gap_s=0.2))
        sink = Sink()
        valve = _pipe(stream, sink)
        first = sink.data

        def pausing(chunk: bytes) -> None:
            first(chunk)
            if len(sink.chunks) == 1:
                valve.pause()  # once, as a splice does when the client's buffer fills

        sink.data = pausing  # type: ignore[method-assign]
        piped.set()

        async def burst_taken() -> bool:
            return len(sink.chunks) == 5

        await eventually(burst_taken, "the rest of the read that paused it")
        await watchdog.a_window_passes()  # paused for the reader
        assert not sink.ends, "time paused for the reader is not the backend's stall"
        sink.data = first  # type: ignore[method-assign]
        valve.resume()
        resumed.set()
        assert await asyncio.wait_for(sink.ended, 5) is None
        assert (
            stream.first_chunk + b"".join(sink.chunks)
            == b"".join(b"data: %d\n\n" % i for i in range(6)) + b"data: [DONE]\n\n"
        )
        await stream.aclose()
    finally:
        resumed.set()
        server.close()
        await server.wait_closed()
