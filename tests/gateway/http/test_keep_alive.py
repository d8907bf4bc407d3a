"""Idle keep-alive on both sides of the gateway, so no request lands on a closing connection.

A request sent on a pooled connection at the moment its server closes it for being idle
is reset (seen once in ~1,700 replayed requests). The side that closes must be the one
that would not reuse it: the gateway keeps client connections longer than clients pool
them, and drops its own upstream connections before engines close them.
"""

from __future__ import annotations

import asyncio
import socket
import time
from pathlib import Path

import yaml
from aiohttp import web

from gateway.config.backends import BackendConfig
from gateway.config.root import ServerConfig
from providers.base import Deadlines, UpstreamRequest
from providers.openai_compatible import OpenAICompatibleProvider
from tests.gateway.processes import free_port, running, wait_ready
from tests.gateway.telemetry.test_workers import CONFIG

DEADLINES = Deadlines(connect_s=5, first_byte_s=5, between_chunks_s=5)


def test_defaults_close_on_the_side_that_does_not_reuse() -> None:
    # Longer than the OpenAI SDK's and aiohttp's pools keep idle connections (5 s, 15 s);
    # shorter than uvicorn's and llama.cpp's 5 s idle timeout upstream.
    assert ServerConfig().keep_alive_s > 15
    backend = BackendConfig(name="b", base_url="http://127.0.0.1:1", models=["m"])
    assert backend.idle_keepalive_s < 5


async def test_provider_drops_idle_upstream_connections_after_its_keepalive() -> None:
    peers: list[object] = []

    async def answer(request: web.Request) -> web.Response:
        peers.append(request.transport.get_extra_info("peername") if request.transport else None)
        return web.json_response({"ok": True})

    app = web.Application()
    app.router.add_post("/v1/chat/completions", answer)
    runner = web.AppRunner(app, keepalive_timeout=30)
    await runner.setup()
    site = web.TCPSite(runner, "127.0.0.1", 0)
    await site.start()
    port = site._server.sockets[0].getsockname()[1]  # type: ignore[union-attr]
    provider = OpenAICompatibleProvider(
        "b", f"http://127.0.0.1:{port}/v1", None, idle_keepalive_s=0.2
    )
    request = UpstreamRequest("/chat/completions", b"{}", stream=False)
    try:
        for pause in (0.0, 0.0, 1.0):
            await asyncio.sleep(pause)
            assert (await provider.send(request, DEADLINES)).status == 200
    finally:
        await provider.close()
        await runner.cleanup()
    # Back to back: one pooled connection; after an idle second: a new one.
    assert peers[0] == peers[1] and peers[2] != peers[1]


def test_gateway_closes_idle_client_connections_after_keep_alive_s(tmp_path: Path) -> None:
    config = tmp_path / "config.yaml"
    config.write_text(yaml.safe_dump({**CONFIG, "server": {"keep_alive_s": 1}}))
    port = free_port()
    log = tmp_path / "serve.log"
    command = ["serve", "--config", str(config), "--port", str(port), "--log-level", "warning"]
    with running(command, log) as proc:
        wait_ready(f"http://127.0.0.1:{port}/readyz", proc, log)
        with socket.create_connection(("127.0.0.1", port), timeout=10) as conn:
            conn.sendall(b"GET /healthz HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n")
            assert _read_response(conn).startswith(b"HTTP/1.1 200")
            idle_from = time.monotonic()
            assert conn.recv(65536) == b""  # closed by the gateway...
            waited = time.monotonic() - idle_from
        assert 0.5 < waited < 4.5, waited  # ...after ~1 s idle, not uvicorn's default 5 s


def _read_response(conn: socket.socket) -> bytes:
    """One whole response: headers, then Content-Length bytes of body (may come apart)."""
    data = b""
    while b"\r\n\r\n" not in data:
        data += conn.recv(65536)
    head, _, body = data.partition(b"\r\n\r\n")
    length = next(
        int(line.split(b":", 1)[1])
        for line in head.split(b"\r\n")
        if line.lower().startswith(b"content-length:")
    )
    while len(body) < length:
        body += conn.recv(65536)
    return head + b"\r\n\r\n" + body
