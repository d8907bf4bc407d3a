"""The floor under any Python relay: a bare byte pipe on uvloop, no HTTP at all.

Usage:
    python -m bench.cpu.floor_pipe LISTEN_PORT UPSTREAM_PORT

Each client connection gets its own upstream connection and bytes go both ways as they
come (one read, one write per arrival; reading pauses while the other side's buffer is
full). It understands nothing, so it cannot route, count, retry or relay an error: what it
costs per request and per SSE chunk is what the event loop and the kernel cost a relay
that reads and writes each chunk as it comes, on this machine. `switchyard bench cpu`
runs it beside the gateway's variants as `tcp-pipe` (bench/cpu/cli.py).
"""

from __future__ import annotations

import asyncio
import sys
from typing import cast

import uvloop


class _Side(asyncio.Protocol):
    """One end of the pipe; what it receives goes to `peer`'s transport."""

    def __init__(self) -> None:
        self.transport: asyncio.Transport | None = None
        self.peer: _Side | None = None
        self.held: list[bytes] = []
        """Bytes that came before the peer's connection was up."""

    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        self.transport = cast(asyncio.Transport, transport)  # uvloop's: not a subclass

    def data_received(self, data: bytes) -> None:
        peer = self.peer
        if peer is None or peer.transport is None:
            self.held.append(data)
        else:
            peer.transport.write(data)

    def pause_writing(self) -> None:
        if self.peer is not None and self.peer.transport is not None:
            self.peer.transport.pause_reading()

    def resume_writing(self) -> None:
        if self.peer is not None and self.peer.transport is not None:
            self.peer.transport.resume_reading()

    def connection_lost(self, exc: Exception | None) -> None:
        if self.peer is not None and self.peer.transport is not None:
            self.peer.transport.close()

    def join(self, peer: _Side) -> None:
        """Pair with `peer` and pass on what came before."""
        self.peer, peer.peer = peer, self
        assert peer.transport is not None
        for data in self.held:
            peer.transport.write(data)
        self.held.clear()


class _Client(_Side):
    def __init__(self, upstream_port: int) -> None:
        super().__init__()
        self._upstream_port = upstream_port
        self._opening: asyncio.Task[None] | None = None

    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        super().connection_made(transport)
        self._opening = asyncio.ensure_future(self._open())

    async def _open(self) -> None:
        loop = asyncio.get_running_loop()
        try:
            _, upstream = await loop.create_connection(_Side, "127.0.0.1", self._upstream_port)
        except OSError:
            if self.transport is not None:
                self.transport.close()
            return
        self.join(upstream)


async def serve(listen_port: int, upstream_port: int) -> None:
    loop = asyncio.get_running_loop()
    server = await loop.create_server(lambda: _Client(upstream_port), "127.0.0.1", listen_port)
    async with server:
        await server.serve_forever()


def main(argv: list[str] | None = None) -> int:
    args = sys.argv[1:] if argv is None else argv
    if len(args) != 2:
        print(__doc__.split("\n\n")[1].strip(), file=sys.stderr)
        return 2
    uvloop.run(serve(int(args[0]), int(args[1])))
    return 0


if __name__ == "__main__":
    sys.exit(main())
