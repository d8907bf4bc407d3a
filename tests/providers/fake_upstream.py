"""A scripted upstream API on loopback: it records each request and plays queued replies.

The adapters' tests drive the real adapters against it. They queue `Reply`s (a whole
body, or pieces written one by one, with `Pause`s or the server's `piece_gap_s` between
them so that the adapter meets them in separate reads) and read back `Seen` requests:
method, path, query, headers and body, as the server got them. A fake of one API
subclasses it to answer some endpoints itself (`next_reply`).
"""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import AsyncIterator, Sequence
from contextlib import asynccontextmanager
from dataclasses import dataclass, field
from typing import Any, TypeVar

import orjson
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import Response, StreamingResponse
from starlette.routing import Route

from emulator.loopback import LoopbackServer

Server = TypeVar("Server", bound="ScriptedServer")


@dataclass(frozen=True)
class Pause:
    seconds: float


@dataclass(frozen=True)
class Reply:
    status: int = 200
    body: bytes | Sequence[bytes | Pause] = b"{}"
    """Bytes are answered as JSON; a sequence is streamed as text/event-stream, one write
    per piece."""
    headers: dict[str, str] = field(default_factory=dict)
    delay_s: float = 0.0
    """How long to wait before answering (for deadlines)."""


@dataclass(frozen=True)
class Seen:
    method: str
    path: str
    """As sent, still percent-encoded."""
    query: str
    headers: dict[str, str]
    body: bytes

    def json(self) -> Any:
        return orjson.loads(self.body)


class ScriptedServer:
    """Answers every path with the next queued reply, or a 404 once none is left."""

    def __init__(self, *, piece_gap_s: float = 0.0) -> None:
        self.replies: list[Reply] = []
        self.seen: list[Seen] = []
        self.played = asyncio.Event()
        """Set once a streamed reply has been written whole."""
        self._piece_gap_s = piece_gap_s
        self._stopping = asyncio.Event()
        app = Starlette(routes=[Route("/{path:path}", self._answer, methods=["GET", "POST"])])
        self._server = LoopbackServer(app, lifespan="off")

    @property
    def url(self) -> str:
        return self._server.url

    async def start(self) -> None:
        await self._server.start()

    async def stop(self) -> None:
        self._stopping.set()  # what still waits out a delay or pause answers now
        await self._server.stop()

    def reply(self, *replies: Reply) -> None:
        self.replies.extend(replies)

    def next_reply(self, seen: Seen) -> Reply:
        """The reply to `seen`: the next queued one."""
        return self.replies.pop(0) if self.replies else Reply(404, b'{"error": {}}')

    async def _answer(self, request: Request) -> Response:
        seen = Seen(
            request.method,
            request.scope["raw_path"].decode("latin-1"),
            request.url.query,
            dict(request.headers),
            await request.body(),
        )
        self.seen.append(seen)
        reply = self.next_reply(seen)
        await self._wait(reply.delay_s)
        if isinstance(reply.body, bytes):
            return Response(reply.body, reply.status, reply.headers, "application/json")
        return StreamingResponse(
            self._play(reply.body), reply.status, reply.headers, "text/event-stream"
        )

    async def _wait(self, seconds: float) -> None:
        """A scripted delay, cut short when the server stops: a test over with a slow
        answer does not wait for it in its teardown."""
        if seconds > 0:
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(self._stopping.wait(), seconds)

    async def _play(self, pieces: Sequence[bytes | Pause]) -> AsyncIterator[bytes]:
        for piece in pieces:
            if isinstance(piece, Pause):
                await self._wait(piece.seconds)
                continue
            yield piece
            if self._piece_gap_s:
                await self._wait(self._piece_gap_s)
        self.played.set()


@asynccontextmanager
async def running(server: Server) -> AsyncIterator[Server]:
    """`server`, started, and stopped on the way out: a fixture's body."""
    await server.start()
    try:
        yield server
    finally:
        await server.stop()
