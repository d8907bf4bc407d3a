"""The floor under a pulled relay on the gateway's own stack: uvicorn and the lean upstream
client, and nothing else (each chunk read by the response's task and sent through ASGI;
the gateway splices its streams instead, `gateway/http/relay/splice.py`).

Usage:
    python -m bench.cpu.floor_relay LISTEN_PORT UPSTREAM_PORT

An ASGI app on uvicorn (httptools, uvloop, no access log) that POSTs each request's body to
the engine with `providers.transport.h1_client.H1Pool` and answers with what came back: a whole
answer with its length, a stream chunk by chunk as it comes. No auth, parsing, routing,
accounting, quality tap or telemetry: what it costs per request and per SSE chunk is what
the server and the client the gateway runs on cost before the gateway does anything.
`switchyard bench cpu` runs it beside the gateway's variants as `asgi-relay`
(bench/cpu/cli.py); `tcp-pipe` (bench/cpu/floor_pipe.py) is the floor under both.
"""

from __future__ import annotations

import sys
from collections.abc import Awaitable, Callable, MutableMapping
from typing import Any

from gateway.http.server import run as serve_one
from providers.transport.h1_client import H1Pool

Scope = MutableMapping[str, Any]
Message = MutableMapping[str, Any]
Receive = Callable[[], Awaitable[Message]]
Send = Callable[[Message], Awaitable[None]]

_CONNECT_S = 5.0


class Relay:
    """Answers every POST with the engine's answer to the same path and body."""

    def __init__(self, upstream_port: int) -> None:
        self._origin = f"http://127.0.0.1:{upstream_port}"
        self._pool: H1Pool | None = None

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] == "lifespan":
            await self._lifespan(receive, send)
            return
        if scope["method"] != "POST":  # readiness: any GET is answered at once
            await _answer(send, 200, b"application/json", b"{}")
            return
        body = await _body(receive)
        assert self._pool is not None
        response = await self._pool.post(self._origin + scope["path"], body, _CONNECT_S)
        kind = response.headers.get("content-type", "application/json").encode("latin-1")
        if not kind.startswith(b"text/event-stream"):
            await _answer(send, response.status, kind, await response.read())
            response.release()
            return
        headers = [(b"content-type", kind), (b"cache-control", b"no-cache")]
        await send({"type": "http.response.start", "status": response.status, "headers": headers})
        while chunk := await response.content.readany():
            await send({"type": "http.response.body", "body": chunk, "more_body": True})
        await send({"type": "http.response.body", "body": b""})
        response.release()

    async def _lifespan(self, receive: Receive, send: Send) -> None:
        while True:
            message = await receive()
            if message["type"] == "lifespan.startup":
                self._pool = H1Pool({}, max_connections=1024, idle_keepalive_s=4.0)
                await send({"type": "lifespan.startup.complete"})
            elif message["type"] == "lifespan.shutdown":
                if self._pool is not None:
                    await self._pool.close()
                await send({"type": "lifespan.shutdown.complete"})
                return


async def _body(receive: Receive) -> bytes:
    parts = []
    while True:
        message = await receive()
        parts.append(message.get("body", b""))
        if not message.get("more_body", False):
            return b"".join(parts)


async def _answer(send: Send, status: int, kind: bytes, body: bytes) -> None:
    headers = [(b"content-type", kind), (b"content-length", b"%d" % len(body))]
    await send({"type": "http.response.start", "status": status, "headers": headers})
    await send({"type": "http.response.body", "body": body})


def main(argv: list[str]) -> int:
    listen, upstream = int(argv[0]), int(argv[1])
    options: dict[str, object] = {
        "host": "127.0.0.1",
        "port": listen,
        "loop": "uvloop",
        "http": "httptools",
        "lifespan": "on",
        "access_log": False,
        "log_level": "warning",
    }
    serve_one(Relay(upstream), options)  # the gateway's server: uvicorn ticking once a second
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
