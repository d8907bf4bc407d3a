"""A fake Anthropic Messages API on loopback: it records what it receives and plays replies.

Replies are scripted per test: a JSON body with a status and headers, or a stream of SSE
pieces sent as separate writes (with optional pauses), so the adapter meets events split
across reads the way a real network splits them.
"""

from __future__ import annotations

import asyncio
from collections import deque
from collections.abc import AsyncIterator, Sequence
from dataclasses import dataclass, field
from typing import Any

import orjson
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import Response, StreamingResponse
from starlette.routing import Route

from emulator.loopback import LoopbackServer


@dataclass(frozen=True)
class Pause:
    seconds: float


@dataclass(frozen=True)
class Reply:
    status: int = 200
    body: Any = None
    """A JSON body (dumped), or None with `pieces` for a stream."""
    pieces: Sequence[bytes | Pause] = ()
    headers: dict[str, str] = field(default_factory=dict)


@dataclass(frozen=True)
class Received:
    method: str
    path: str
    query: dict[str, str]
    headers: dict[str, str]
    body: Any


def sse(*events: dict[str, Any]) -> list[bytes]:
    """Events as Anthropic sends them: an `event:` line, a `data:` line, a blank line."""
    return [
        b"event: " + event["type"].encode() + b"\ndata: " + orjson.dumps(event) + b"\n\n"
        for event in events
    ]


def split_each(pieces: Sequence[bytes], at: int = 7) -> list[bytes]:
    """Every piece cut in two `at` bytes in: events arrive across reads."""
    return [half for piece in pieces for half in (piece[:at], piece[at:]) if half]


class FakeAnthropic:
    def __init__(self) -> None:
        self.received: list[Received] = []
        self.replies: deque[Reply] = deque()
        self.models_status = 200
        self._server = LoopbackServer(
            Starlette(
                routes=[
                    Route("/v1/messages", self._messages, methods=["POST"]),
                    Route("/v1/models", self._models, methods=["GET"]),
                ]
            ),
            lifespan="off",
        )

    @property
    def base_url(self) -> str:
        return self._server.url + "/v1"

    async def start(self) -> None:
        await self._server.start()

    async def stop(self) -> None:
        await self._server.stop()

    async def _messages(self, request: Request) -> Response:
        self.received.append(await _received(request))
        reply = self.replies.popleft()
        if reply.body is None:
            return StreamingResponse(
                _play(reply.pieces), reply.status, reply.headers, "text/event-stream"
            )
        return Response(orjson.dumps(reply.body), reply.status, reply.headers, "application/json")

    async def _models(self, request: Request) -> Response:
        self.received.append(await _received(request))
        body = {"data": [{"type": "model", "id": "claude-test"}], "has_more": True}
        return Response(orjson.dumps(body), self.models_status, media_type="application/json")


async def _received(request: Request) -> Received:
    raw = await request.body()
    return Received(
        request.method,
        request.url.path,
        dict(request.query_params),
        dict(request.headers),
        orjson.loads(raw) if raw else None,
    )


async def _play(pieces: Sequence[bytes | Pause]) -> AsyncIterator[bytes]:
    for piece in pieces:
        if isinstance(piece, Pause):
            await asyncio.sleep(piece.seconds)
        else:
            yield piece
