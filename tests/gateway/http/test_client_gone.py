"""A client that leaves while sending its body: nothing is answered, the gateway counts it
and goes on serving (no unhandled error in the ASGI app)."""

from __future__ import annotations

import asyncio
import logging
from urllib.parse import urlsplit

import pytest

from tests.conftest import StartEmulator, StartGateway, eventually, make_config


async def test_a_client_gone_mid_body_is_counted_and_nothing_breaks(
    start_emulator: StartEmulator, start_gateway: StartGateway, caplog: pytest.LogCaptureFixture
) -> None:
    engine = await start_emulator()
    gw = await start_gateway(make_config({"a": engine.base_url}, health={"active_probes": False}))
    where = urlsplit(gw.url)
    assert where.hostname is not None and where.port is not None
    with caplog.at_level(logging.ERROR):
        _reader, writer = await asyncio.open_connection(where.hostname, where.port)
        head = b"POST /v1/chat/completions HTTP/1.1\r\nhost: x\r\n"
        writer.write(head + b"content-type: application/json\r\ncontent-length: 5000\r\n\r\n")
        writer.write(b'{"model": "default", "messages": [')  # and no more
        await writer.drain()
        writer.close()  # TCP keeps the order: the gateway reads the head and part, then the end
        await writer.wait_closed()

        async def counted() -> bool:
            return gw.gateway.telemetry.refusals.counted("client_disconnected") == 1

        await eventually(counted, "the disconnect counted")
        ask = {"model": "default", "messages": [{"role": "user", "content": "hi"}]}
        response = await gw.client.post("/v1/chat/completions", json=ask)
        assert response.status_code == 200
    assert not [r for r in caplog.records if r.levelno >= logging.ERROR], "nothing unhandled"
