"""A scripted Gemini-wire server on loopback: it records each request and plays replies.

Tests queue `Reply`s (a whole body, or a list of SSE pieces written one by one with a
pause between, so the adapter reads them as separate chunks) and read back `Seen`
requests: method, path, query, headers and body, as the server got them.
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from dataclasses import dataclass, field
from typing import Any

import orjson
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import Response, StreamingResponse
from starlette.routing import Route

from emulator.loopback import LoopbackServer

_PIECE_GAP_S = 0.01


@dataclass(frozen=True)
class Reply:
    status: int = 200
    body: bytes | list[bytes] = b"{}"
    """A list is streamed as text/event-stream, one write per item."""
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
    def __init__(self) -> None:
        self.replies: list[Reply] = []
        self.seen: list[Seen] = []
        app = Starlette(routes=[Route("/{path:path}", self._answer, methods=["GET", "POST"])])
        self._server = LoopbackServer(app, lifespan="off")

    @property
    def url(self) -> str:
        return self._server.url

    async def start(self) -> None:
        await self._server.start()

    async def stop(self) -> None:
        await self._server.stop()

    def reply(self, *replies: Reply) -> None:
        self.replies.extend(replies)

    async def _answer(self, request: Request) -> Response:
        self.seen.append(
            Seen(
                request.method,
                request.scope["raw_path"].decode("latin-1"),
                request.url.query,
                dict(request.headers),
                await request.body(),
            )
        )
        reply = self.replies.pop(0) if self.replies else Reply(404, b'{"error": {}}')
        await asyncio.sleep(reply.delay_s)
        if isinstance(reply.body, list):
            return StreamingResponse(
                _pieces(reply.body), reply.status, reply.headers, "text/event-stream"
            )
        return Response(reply.body, reply.status, reply.headers, "application/json")


async def _pieces(pieces: list[bytes]) -> AsyncIterator[bytes]:
    for piece in pieces:
        yield piece
        await asyncio.sleep(_PIECE_GAP_S)


def sse(*events: dict[str, Any]) -> list[bytes]:
    """Gemini's framing: `data: {json}` and a CRLF blank line after each event."""
    return [b"data: " + orjson.dumps(event) + b"\r\n\r\n" for event in events]
