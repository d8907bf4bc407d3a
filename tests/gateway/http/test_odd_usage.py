"""A backend whose usage counts are not numbers: the answer still reaches the client, the
backend's slot is freed and nothing counts against it (a bad count reads as 0)."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator

import orjson
import pytest

from tests.conftest import StartGateway, make_config

ODD_USAGE = {"prompt_tokens": "n/a", "completion_tokens": [1], "total_tokens": None}


def _answer(stream: bool) -> bytes:
    reply = {"id": "c1", "object": "chat.completion", "created": 1, "model": "emulated-model"}
    if not stream:
        message = {"role": "assistant", "content": "hello"}
        body = orjson.dumps(
            reply | {"choices": [{"index": 0, "message": message, "finish_reason": "stop"}]}
            | {"usage": ODD_USAGE}
        )  # fmt: skip
        head = b"HTTP/1.1 200 OK\r\ncontent-type: application/json\r\n"
        return head + b"content-length: %d\r\n\r\n%b" % (len(body), body)
    chunk = reply | {"object": "chat.completion.chunk"}
    events = [
        chunk | {"choices": [{"index": 0, "delta": {"role": "assistant", "content": "hel"}}]},
        chunk | {"choices": [{"index": 0, "delta": {"content": "lo"}, "finish_reason": "stop"}]},
        chunk | {"choices": [], "usage": ODD_USAGE},
    ]
    sse = b"".join(b"data: %b\n\n" % orjson.dumps(e) for e in events) + b"data: [DONE]\n\n"
    head = b"HTTP/1.1 200 OK\r\ncontent-type: text/event-stream\r\n"
    return head + b"content-length: %d\r\n\r\n%b" % (len(sse), sse)


@pytest.fixture
async def odd_backend() -> AsyncIterator[str]:
    async def serve(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        try:
            while True:
                head = await reader.readuntil(b"\r\n\r\n")
                length = next(
                    int(line.split(b":", 1)[1])
                    for line in head.split(b"\r\n")
                    if line.lower().startswith(b"content-length:")
                )
                body = orjson.loads(await reader.readexactly(length))
                writer.write(_answer(bool(body.get("stream"))))
                await writer.drain()
        except (asyncio.IncompleteReadError, ConnectionError):
            pass
        finally:
            writer.close()

    server = await asyncio.start_server(serve, "127.0.0.1", 0)
    try:
        yield f"http://127.0.0.1:{server.sockets[0].getsockname()[1]}/v1"
    finally:
        server.close()
        await server.wait_closed()


@pytest.mark.parametrize("stream", [False, True], ids=["whole", "stream"])
async def test_odd_usage_counts_neither_fail_the_request_nor_keep_the_backend(
    odd_backend: str, start_gateway: StartGateway, stream: bool
) -> None:
    gw = await start_gateway(make_config({"a": odd_backend}, health={"active_probes": False}))
    ask = {"model": "default", "messages": [{"role": "user", "content": "hi"}], "stream": stream}
    for _ in range(3):
        response = await gw.client.post("/v1/chat/completions", json=ask)
        assert response.status_code == 200
        assert b"hel" in response.content
    (backend,) = gw.gateway.state.describe()
    assert backend["in_flight"] == 0, "every answer freed the backend's slot"
    assert backend["failures"] == 0 and backend["healthy"] is True
