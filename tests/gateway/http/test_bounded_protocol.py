"""Client bounds on a real gateway, from raw sockets: a slow head or body ends with 408 and
the connection closed, an idle one is closed, the process refuses connections past its cap
until a slow one's bound frees a slot; a slow response is never cut, a 413 still comes.

The gateway runs in this test's loop on uvicorn with the protocol `switchyard serve` uses
(`tests.conftest.served_protocol`), its bounds short. Every wait is for an event (the
gateway closing the connection, a count), guarded by a timeout; the only sleeps are a slow
client's own pauses.
"""

from __future__ import annotations

import asyncio
import logging
import time
from typing import Any
from urllib.parse import urlsplit

import orjson
import pytest

from gateway.config.root import parse_config
from gateway.http.bounded_protocol import BoundedHttpToolsProtocol
from tests.conftest import (
    RunningGateway,
    StartEmulator,
    StartGateway,
    eventually,
    make_config,
    served_protocol,
)

HEADER_S = 0.5
BODY_S = 0.5
HANG_S = 20.0
"""A guard against a hang, never a measure: every bound here ends in about a second."""
CHAT = b"POST /v1/chat/completions HTTP/1.1\r\nhost: gateway\r\ncontent-type: application/json\r\n"


async def _gateway(
    start_emulator: StartEmulator,
    start_gateway: StartGateway,
    token_delay_ms: float = 0.0,
    **server: Any,
) -> RunningGateway:
    engine = await start_emulator(token_delay_ms=token_delay_ms)
    clients = {"header_timeout_s": HEADER_S, "body_timeout_s": BODY_S, **server.pop("clients", {})}
    config = make_config({"only": engine.base_url}, server={"clients": clients, **server})
    return await start_gateway(config)


async def _connect(gw: RunningGateway) -> tuple[asyncio.StreamReader, asyncio.StreamWriter]:
    where = urlsplit(gw.url)
    assert where.hostname is not None and where.port is not None
    return await asyncio.open_connection(where.hostname, where.port)


async def _until_closed(reader: asyncio.StreamReader) -> bytes:
    """Everything the gateway sends until it closes the connection."""
    async with asyncio.timeout(HANG_S):
        return await reader.read()


def _error(raw: bytes) -> tuple[int, str, dict[str, str]]:
    """Status, error code and headers of one whole response that closes its connection."""
    head, _, body = raw.partition(b"\r\n\r\n")
    lines = head.decode().split("\r\n")
    headers = {k.lower(): v for k, v in (line.split(": ", 1) for line in lines[1:])}
    assert headers["connection"] == "close"
    assert int(headers["content-length"]) == len(body), "one whole response, nothing after"
    return int(lines[0].split()[1]), orjson.loads(body)["error"]["code"], headers


def _chat(**fields: Any) -> bytes:
    ask = {"model": "default", "messages": [{"role": "user", "content": "hi"}], **fields}
    return orjson.dumps(ask)


def test_served_gateways_run_the_bounded_protocol() -> None:
    config = parse_config(make_config({"only": "http://127.0.0.1:1/v1"}))
    assert served_protocol(config) is BoundedHttpToolsProtocol


@pytest.mark.parametrize(
    "sent",
    [b"", b"POST /v1/chat/completions HTTP/1.1\r\nhost: gateway\r\n"],
    ids=["nothing", "half-a-head"],
)
async def test_a_head_not_complete_in_time_gets_408_and_the_connection_closed(
    start_emulator: StartEmulator,
    start_gateway: StartGateway,
    caplog: pytest.LogCaptureFixture,
    sent: bytes,
) -> None:
    gw = await _gateway(start_emulator, start_gateway)
    with caplog.at_level(logging.WARNING, logger="switchyard"):
        started = time.monotonic()
        reader, writer = await _connect(gw)
        writer.write(sent)
        raw = await _until_closed(reader)
        waited = time.monotonic() - started
    writer.close()
    status, code, _ = _error(raw)
    assert (status, code) == (408, "request_timeout")
    assert waited >= HEADER_S - 0.05
    tally = gw.gateway.telemetry.connections
    assert tally.closed == {"header_timeout": 1}
    (line,) = [r.getMessage() for r in caplog.records if "did not arrive" in r.getMessage()]
    assert "head did not arrive within 0.5 s; answered 408 and closed" in line


async def test_a_body_shorter_than_its_content_length_gets_408_after_the_body_timeout(
    start_emulator: StartEmulator, start_gateway: StartGateway
) -> None:
    gw = await _gateway(start_emulator, start_gateway)
    reader, writer = await _connect(gw)
    started = time.monotonic()
    writer.write(CHAT + b"content-length: 500\r\n\r\n" + _chat()[:60])
    raw = await _until_closed(reader)
    writer.close()
    assert _error(raw)[:2] == (408, "request_timeout")
    assert time.monotonic() - started >= BODY_S - 0.05
    assert gw.gateway.telemetry.connections.closed == {"body_timeout": 1}
    # The request was never whole: nothing reached a backend, the app saw its client leave.
    response = await gw.client.post("/v1/chat/completions", content=_chat())
    assert response.status_code == 200


async def test_a_body_trickling_slower_than_the_minimum_rate_gets_408(
    start_emulator: StartEmulator, start_gateway: StartGateway
) -> None:
    # A byte every 50 ms never waits body_timeout_s, but is 20 bytes/s, under 200.
    clients = {"body_timeout_s": 0.3, "body_min_bytes_per_s": 200}
    gw = await _gateway(start_emulator, start_gateway, clients=clients)
    reader, writer = await _connect(gw)
    body = _chat()
    writer.write(CHAT + b"content-length: %d\r\n\r\n" % len(body))

    async def trickle() -> None:
        for byte in body:
            writer.write(bytes([byte]))
            await asyncio.sleep(0.05)  # the slow client's own pace

    trickling = asyncio.create_task(trickle())
    raw = await _until_closed(reader)
    trickling.cancel()
    writer.close()
    status, code, _ = _error(raw)
    assert (status, code) == (408, "request_timeout")
    assert b"slower than 200 bytes/s" in raw
    assert gw.gateway.telemetry.connections.closed == {"body_rate": 1}


async def test_responses_slower_than_every_bound_are_never_cut(
    start_emulator: StartEmulator, start_gateway: StartGateway
) -> None:
    # 40 tokens 50 ms apart: each response takes about 2 s, four times every read bound.
    gw = await _gateway(start_emulator, start_gateway, token_delay_ms=50.0)
    ask = {"model": "default", "messages": [{"role": "user", "content": "hi"}]}
    ask |= {"max_tokens": 40, "stream": True, "stream_options": {"include_usage": True}}
    async with gw.client.stream("POST", "/v1/chat/completions", json=ask) as stream:
        assert stream.status_code == 200
        text = "".join([chunk async for chunk in stream.aiter_text()])
    assert text.rstrip().endswith("data: [DONE]")
    whole = await gw.client.post("/v1/chat/completions", json={**ask, "stream": False})
    assert whole.status_code == 200
    assert whole.json()["usage"]["completion_tokens"] == 40
    assert gw.gateway.telemetry.connections.closed == {}


async def test_a_next_request_trickling_in_during_a_stream_leaves_the_stream_whole(
    start_emulator: StartEmulator, start_gateway: StartGateway
) -> None:
    gw = await _gateway(start_emulator, start_gateway, token_delay_ms=50.0)
    reader, writer = await _connect(gw)
    body = _chat(max_tokens=40, stream=True)
    writer.write(CHAT + b"content-length: %d\r\n\r\n" % len(body) + body)
    writer.write(b"POST /v1/chat/completions HTTP/1.1\r\n")  # and no more of it
    raw = await _until_closed(reader)
    writer.close()
    assert raw.startswith(b"HTTP/1.1 200 ")
    assert raw.endswith(b"data: [DONE]\n\n\r\n0\r\n\r\n"), "the stream whole, then closed"
    assert b" 408 " not in raw
    assert gw.gateway.telemetry.connections.closed == {"header_timeout": 1}


async def test_a_pipelined_request_whose_body_never_comes_ends_the_connection_after_the_stream(
    start_emulator: StartEmulator, start_gateway: StartGateway
) -> None:
    gw = await _gateway(start_emulator, start_gateway, token_delay_ms=50.0)
    reader, writer = await _connect(gw)
    body = _chat(max_tokens=40, stream=True)
    writer.write(CHAT + b"content-length: %d\r\n\r\n" % len(body) + body)
    writer.write(CHAT + b"content-length: 500\r\n\r\n" + _chat()[:60])  # queued, never whole
    raw = await _until_closed(reader)
    writer.close()
    assert raw.startswith(b"HTTP/1.1 200 ")
    assert raw.endswith(b"data: [DONE]\n\n\r\n0\r\n\r\n"), "the stream whole, then closed"
    assert raw.count(b"HTTP/1.1 ") == 1, "the second request was never answered"
    assert gw.gateway.telemetry.connections.closed == {"body_timeout": 1}


async def test_a_body_over_the_size_limit_still_gets_413_then_the_rest_is_not_waited_for(
    start_emulator: StartEmulator, start_gateway: StartGateway
) -> None:
    gw = await _gateway(start_emulator, start_gateway, max_body_bytes=4096)
    reader, writer = await _connect(gw)
    writer.write(CHAT + b"content-length: 100000\r\n\r\n" + _chat()[:60])
    raw = await _until_closed(reader)
    writer.close()
    assert raw.startswith(b"HTTP/1.1 413 ")
    assert b"request_too_large" in raw and b" 408 " not in raw
    assert gw.gateway.telemetry.connections.closed == {"body_timeout": 1}


async def test_an_idle_kept_alive_connection_is_closed_after_keep_alive_s(
    start_emulator: StartEmulator, start_gateway: StartGateway
) -> None:
    gw = await _gateway(start_emulator, start_gateway, keep_alive_s=1)
    reader, writer = await _connect(gw)
    for _ in range(2):  # kept alive between two requests...
        writer.write(b"GET /healthz HTTP/1.1\r\nhost: gateway\r\n\r\n")
        head = await reader.readuntil(b"\r\n\r\n")
        assert head.startswith(b"HTTP/1.1 200 ")
        length = int(head.lower().split(b"content-length: ")[1].split(b"\r\n")[0])
        await reader.readexactly(length)
    assert await _until_closed(reader) == b""  # ...then closed once idle, nothing sent
    writer.close()
    assert gw.gateway.telemetry.connections.closed == {"keep_alive": 1}


async def test_past_the_cap_a_connection_is_refused_until_a_slow_ones_bound_frees_a_slot(
    start_emulator: StartEmulator, start_gateway: StartGateway
) -> None:
    cap = 5
    gw = await _gateway(start_emulator, start_gateway, clients={"max_connections": cap})
    slow = [await _connect(gw) for _ in range(cap)]
    for _, writer in slow:
        writer.write(b"POST /v1/chat/completions HTTP/1.1\r\n")
    tally = gw.gateway.telemetry.connections

    async def all_open() -> bool:
        return tally.open == cap

    await eventually(all_open, f"{cap} slow connections open")
    reader, writer = await _connect(gw)
    status, code, headers = _error(await _until_closed(reader))
    writer.close()
    assert (status, code, headers["retry-after"]) == (503, "too_many_connections", "1")
    # The slow connections' own bound ends them, and with it frees their slots.
    for reader, writer in slow:
        assert _error(await _until_closed(reader))[0] == 408
        writer.close()
    reader, writer = await _connect(gw)
    writer.write(b"GET /healthz HTTP/1.1\r\nhost: gateway\r\nconnection: close\r\n\r\n")
    assert (await _until_closed(reader)).startswith(b"HTTP/1.1 200 ")
    writer.close()
    assert tally.closed == {"max_connections": 1, "header_timeout": cap}


async def test_metrics_count_the_connections_each_bound_ended(
    start_emulator: StartEmulator, start_gateway: StartGateway
) -> None:
    gw = await _gateway(start_emulator, start_gateway)
    reader, writer = await _connect(gw)
    writer.write(b"GET /healthz HTTP/1.1\r\n")
    await _until_closed(reader)
    writer.close()
    wanted = 'switchyard_client_connections_closed_total{bound="header_timeout"} 1.0'

    async def exported() -> bool:  # the sampler exports the counts once a second
        return wanted in (await gw.client.get("/metrics")).text

    await eventually(exported, "the ended connection counted in /metrics", within_s=HANG_S)

    async def one_open() -> bool:  # the client's pooled connection to /metrics
        return "switchyard_client_connections 1.0" in (await gw.client.get("/metrics")).text

    await eventually(one_open, "the open connection counted in /metrics", within_s=HANG_S)
