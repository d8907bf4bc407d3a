"""What relaying one SSE chunk costs in-process on the spliced path, with warm caches and
with the CPU's caches swept before each chunk (as after a millisecond's idle between two
tokens on a busy machine).

The path is the gateway's own: the lean client's connection parses the chunked frame
(httptools), the piped stream checks its size and stamps its stall watchdog, the splice
keeps the relay's books (`RelayState`, the taps fed in batches) and frames the chunk for
the client. Only the two sockets are left out: the upstream bytes are handed to the
connection's `data_received`, and the client's transport takes the write and drops it.
`switchyard bench cpu` prints both beside its other in-process parts (`bench.cpu.parts`).

Usage:
    python -m bench.cpu.chunk_path
"""

from __future__ import annotations

import asyncio
import time

from gateway.http.relay.splice import Splice
from gateway.http.relay.streaming import RelayState, StreamOutcome
from gateway.quality.signals.collect import StreamCollector
from providers.transport.h1_connection import H1Connection
from providers.transport.h1_response import H1Response
from providers.transport.http_stream import HttpStream
from providers.transport.upstream_errors import UpstreamErrors

EVENT = (
    b'data: {"id":"chatcmpl-1","object":"chat.completion.chunk","created":1,"model":"m",'
    b'"choices":[{"index":0,"delta":{"content":" word"},"finish_reason":null}]}\n\n'
)
FRAME = b"%x\r\n%b\r\n" % (len(EVENT), EVENT)
HEAD = b"HTTP/1.1 200 OK\r\ncontent-type: text/event-stream\r\ntransfer-encoding: chunked\r\n\r\n"
SWEEP_BYTES = 16 << 20
"""Written over before each timed chunk in the swept measure: more than the CPU's caches."""


class _Socket:
    """Both ends' transport: takes writes and drops them."""

    def write(self, data: bytes) -> None:
        pass

    def writelines(self, data: object) -> None:
        pass

    def pause_reading(self) -> None:
        pass

    def resume_reading(self) -> None:
        pass

    def abort(self) -> None:
        pass


class _Client:
    """The client's side of the splice, framing each chunk as uvicorn's transport gets it."""

    def __init__(self) -> None:
        self._socket = _Socket()

    def write(self, data: bytes) -> bool:
        if data:
            self._socket.write(b"%x\r\n%b\r\n" % (len(data), data))
        return False

    async def writable(self) -> None:
        return None


class _Pool:
    def give_back(self, connection: H1Connection) -> None:
        pass


async def _spliced() -> tuple[H1Connection, asyncio.Task[None]]:
    """A connection whose stream is spliced, the first chunk already relayed; the task
    running the splice."""
    loop = asyncio.get_running_loop()
    connection = H1Connection(loop, ("127.0.0.1", 1))
    connection.connection_made(_Socket())  # type: ignore[arg-type]
    connection.busy = True
    connection.data_received(HEAD + FRAME)
    response = H1Response(_Pool(), connection)  # type: ignore[arg-type]
    first = await response.content.readany()
    stream = HttpStream("engine", UpstreamErrors("engine"), response, first, 60.0, 1 << 40)
    state = RelayState(float("inf"), StreamOutcome(StreamCollector()), stream.content_type)
    splice = Splice(stream, state)
    running = asyncio.ensure_future(splice.run(_Client()))
    await asyncio.sleep(0)  # the splice writes the first chunk and pipes the stream
    return connection, running


async def relay_parts(
    warm_calls: int = 20_000, swept_calls: int = 2_000
) -> list[tuple[str, float]]:
    """(part, µs per chunk), warm and swept, on the running event loop."""
    connection, running = await _spliced()
    feed = connection.data_received
    for _ in range(warm_calls // 10):
        feed(FRAME)
    best = float("inf")
    for _ in range(5):
        started = time.thread_time()
        for _ in range(warm_calls):
            feed(FRAME)
        best = min(best, (time.thread_time() - started) / warm_calls)
    sweep = bytearray(SWEEP_BYTES)
    zeros = bytes(len(sweep[::64]))
    total = 0
    for _ in range(swept_calls):
        sweep[::64] = zeros  # one write per cache line
        started_ns = time.perf_counter_ns()
        feed(FRAME)
        total += time.perf_counter_ns() - started_ns
    running.cancel()
    return [
        ("relay one SSE chunk, spliced (warm caches)", round(best * 1e6, 2)),
        ("relay one SSE chunk, spliced (caches swept first)", round(total / swept_calls / 1e3, 2)),
    ]


if __name__ == "__main__":
    for name, us in asyncio.run(relay_parts()):
        print(f"{name}: {us:.2f} µs")
