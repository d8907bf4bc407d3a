"""The replay client against a scripted server on loopback: the class and tenant headers it
sends, the admission headers and refusal codes it reads back."""

from __future__ import annotations

from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import orjson
import pytest

from bench.replay.client import HttpTransport, new_session
from bench.replay.schedule import RequestResult
from bench.replay.trace import Trace, load_trace
from tests.bench.synthetic import request, segment, write_trace
from tests.providers.fake_upstream import Reply, ScriptedServer, running

CHUNK = {"id": "c1", "object": "chat.completion.chunk", "created": 1, "model": "m"}
USAGE = {"prompt_tokens": 5, "completion_tokens": 2, "total_tokens": 7}


def _stream() -> list[bytes]:
    events = [
        CHUNK | {"choices": [{"index": 0, "delta": {"content": "he"}}]},
        CHUNK | {"choices": [{"index": 0, "delta": {"content": "y"}, "finish_reason": "stop"}]},
        CHUNK | {"choices": [], "usage": USAGE},
    ]
    return [*(b"data: %b\n\n" % orjson.dumps(e) for e in events), b"data: [DONE]\n\n"]


def _refusal(code: str | None, message: str = "not now") -> bytes:
    error = {"message": message, "type": "rate_limit_error", "code": code}
    return orjson.dumps({"error": error})


@pytest.fixture
async def server() -> AsyncIterator[ScriptedServer]:
    async with running(ScriptedServer()) as started:
        yield started


@pytest.fixture
def trace(tmp_path: Path) -> Trace:
    lines: list[dict[str, Any] | str] = [
        segment("a", "hello"),
        request("labelled", ["a"], start=0, priority="interactive", tenant="acme"),
        request("plain", ["a"], start=0),
    ]
    return load_trace(write_trace(tmp_path / "t.jsonl", lines))


async def _send(server: ScriptedServer, trace: Trace, request_id: str) -> RequestResult:
    (chosen,) = [r for r in trace.requests if r.id == request_id]
    async with new_session(10) as session:
        transport = HttpTransport(session, f"{server.url}/v1", trace, model="m")
        return await transport.send(chosen)


async def test_class_and_tenant_go_out_as_headers(server: ScriptedServer, trace: Trace) -> None:
    server.reply(Reply(body=_stream()), Reply(body=_stream()))
    labelled = await _send(server, trace, "labelled")
    plain = await _send(server, trace, "plain")
    assert labelled.ok and plain.ok
    first, second = (seen.headers for seen in server.seen)
    assert first["x-switchyard-priority"] == "interactive"
    assert first["x-switchyard-tenant"] == "acme"
    assert "x-switchyard-priority" not in second and "x-switchyard-tenant" not in second


@pytest.mark.parametrize(
    ("headers", "queue_ms", "admission"),
    [
        ({"x-switchyard-queue-ms": "12.5", "x-switchyard-admission": "queued"}, 12.5, "queued"),
        ({"x-switchyard-admission": "fallback"}, None, "fallback"),
        ({"x-switchyard-queue-ms": "soon"}, None, None),
        ({"x-switchyard-queue-ms": "-3"}, None, None),
        ({}, None, None),
    ],
)
async def test_admission_headers_are_read(
    server: ScriptedServer,
    trace: Trace,
    headers: dict[str, str],
    queue_ms: float | None,
    admission: str | None,
) -> None:
    server.reply(Reply(body=_stream(), headers=headers))
    result = await _send(server, trace, "labelled")
    assert result.ok and result.completion_tokens == 2
    assert (result.queue_ms, result.admission) == (queue_ms, admission)


@pytest.mark.parametrize(
    ("status", "body", "code", "error"),
    [
        (429, _refusal("request_shed"), "request_shed", "HTTP 429 request_shed"),
        (429, _refusal("queue_full"), "queue_full", "HTTP 429 queue_full"),
        (503, _refusal("deadline_unmeetable"), "deadline_unmeetable", "HTTP 503 deadline_"),
        (429, _refusal(None), None, "HTTP 429: not now"),
        (502, b"<html>bad gateway</html>", None, "HTTP 502: <html>bad gateway"),
    ],
)
async def test_a_refusal_keeps_its_status_and_error_code(
    server: ScriptedServer, trace: Trace, status: int, body: bytes, code: str | None, error: str
) -> None:
    headers = {"x-switchyard-queue-ms": "40", "x-switchyard-admission": "shed"}
    server.reply(Reply(status, body, headers))
    result = await _send(server, trace, "plain")
    assert not result.ok and result.status == status
    assert result.error_code == code
    assert result.error is not None and result.error.startswith(error)
    assert (result.queue_ms, result.admission) == (40.0, "shed")


async def test_an_error_event_mid_stream_keeps_its_code(
    server: ScriptedServer, trace: Trace
) -> None:
    event = {"error": {"message": "engine gone", "type": "server_error", "code": "upstream_down"}}
    server.reply(Reply(body=[_stream()[0], b"data: %b\n\n" % orjson.dumps(event)]))
    result = await _send(server, trace, "plain")
    assert not result.ok and result.status == 200
    assert result.error_code == "upstream_down"
    assert result.error == "error event: engine gone"
