"""Idle keep-alive on both sides of the gateway, so no request lands on a closing connection.

A request sent on a pooled connection at the moment its server closes it for being idle
is reset (seen once in ~1,700 replayed requests). The side that closes must be the one
that would not reuse it: the gateway keeps client connections longer than clients pool
them, and drops its own upstream connections before engines close them.
"""

from __future__ import annotations

import argparse
import socket
from pathlib import Path

import pytest
import yaml
from aiohttp import web

from gateway.cli import _uvicorn_options
from gateway.config.backends import BackendConfig
from gateway.config.root import ServerConfig, parse_config
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


@pytest.mark.parametrize(
    ("idle_keepalive_s", "same_connection"),
    [(30.0, True), (0.0, False)],
    ids=["kept-within-its-keepalive", "dropped-past-its-keepalive"],
)
async def test_provider_keeps_idle_upstream_connections_for_its_keepalive(
    idle_keepalive_s: float, same_connection: bool
) -> None:
    # The provider hands its keep-alive to its pool; the pool's clock decides when an idle
    # connection is too old (tests/providers/transport/test_h1_client.py, on a fake clock).
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
        "b", f"http://127.0.0.1:{port}/v1", None, idle_keepalive_s=idle_keepalive_s
    )
    request = UpstreamRequest("/chat/completions", b"{}", stream=False)
    try:
        for _ in range(2):
            assert (await provider.send(request, DEADLINES)).status == 200
    finally:
        await provider.close()
        await runner.cleanup()
    assert (peers[0] == peers[1]) is same_connection


def test_serve_gives_uvicorn_the_configured_keep_alive_s() -> None:
    config = parse_config({**CONFIG, "server": {"keep_alive_s": 1}})
    options = _uvicorn_options(argparse.Namespace(log_level="warning"), config, "127.0.0.1", 1)
    assert options["timeout_keep_alive"] == 1


def test_gateway_closes_idle_client_connections(tmp_path: Path) -> None:
    config = tmp_path / "config.yaml"
    config.write_text(yaml.safe_dump({**CONFIG, "server": {"keep_alive_s": 1}}))
    port = free_port()
    log = tmp_path / "serve.log"
    command = ["serve", "--config", str(config), "--port", str(port), "--log-level", "warning"]
    request = b"GET /healthz HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n"
    with running(command, log) as proc:
        wait_ready(f"http://127.0.0.1:{port}/readyz", proc, log)
        with socket.create_connection(("127.0.0.1", port), timeout=30) as conn:
            for _ in range(2):  # kept alive between two requests...
                conn.sendall(request)
                assert _read_response(conn).startswith(b"HTTP/1.1 200")
            assert conn.recv(65536) == b""  # ...and closed by the gateway once idle


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
