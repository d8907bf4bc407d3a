"""Faults after the first byte: a stall mid-stream, a stream cut after N chunks, a stream
that ends without `[DONE]`, a stream the backend ends with its own error event. The
gateway has relayed bytes already, so it never retries (the other engine sees nothing);
the client's stream ends with an explicit error event in its own API's shape, never a
clean-looking end; the record names the error and the backend counts a failure."""

from __future__ import annotations

from typing import Any

import pytest

from gateway.telemetry.access_log import concise_line
from tests.conftest import StartEmulator, StartGateway
from tests.faults.rig import ROUTE, Rig, attempts, chat, openai_error, sse_events, start_rig

FAULTS: dict[str, tuple[dict[str, Any], str]] = {
    "stall": ({"stall_mid_stream_after_chunks": 3, "stall_mid_stream_s": 5.0}, "upstream_timeout"),
    "cut": ({"cut_stream_after_chunks": 3}, "upstream_protocol_error"),
    "no-done": ({"omit_done": True}, "upstream_protocol_error"),
    "error-event": ({"error_event_after_chunks": 3}, "upstream_stream_error"),
}
BY_FAULT = pytest.mark.parametrize("fault", list(FAULTS))
ASK = [{"role": "user", "content": "tell me about the fault suite"}]


async def broken_rig(
    start_emulator: StartEmulator, start_gateway: StartGateway, fault: str
) -> tuple[Rig, str]:
    """Engine a (tried first) breaks its streams with `fault`; the code the client sees."""
    rig = await start_rig(
        start_emulator, start_gateway, timeouts={"first_token_s": 5, "between_chunks_s": 0.3}
    )
    faults, code = FAULTS[fault]
    rig.fault("a", **faults)
    return rig, code


async def assert_not_retried(rig: Rig, code: str, fault: str) -> None:
    """b was never asked; the record says a served and how its stream broke."""
    assert rig.received() == {"a": 1, "b": 0}, "no retry after the first byte"
    record = await rig.last_record()
    assert (record.status, record.backend, record.error) == (200, "a", code)
    assert attempts(record) == [("a", "ok")]
    assert record.chunks is not None and record.chunks >= 1
    line = concise_line(record)
    assert line.startswith(f"{ROUTE} -> a 200 ") and line.endswith(
        f"error {code}  decision {record.decision.decision.id}"
    )
    # What the backend reported it generated, if it got to say so, is what it bills:
    # a cut or stalled stream never reports usage, one without [DONE] does.
    if fault == "no-done":
        assert record.usage is not None and rig.cost_usd(record) > 0
    else:
        assert record.usage is None and rig.cost_usd(record) == 0.0
    assert await rig.metric("switchyard_cost_usd_total", backend="b") == 0.0
    health = rig.health()
    assert health["a"]["failures"] == 1 and health["b"]["requests"] == 0


@BY_FAULT
async def test_openai_chat_stream_ends_with_an_error_event(
    start_emulator: StartEmulator, start_gateway: StartGateway, fault: str
) -> None:
    rig, code = await broken_rig(start_emulator, start_gateway, fault)
    response = await rig.client.post("/v1/chat/completions", json=chat(stream=True))
    assert response.status_code == 200
    assert response.headers["x-switchyard-backend"] == "a"
    assert b'"content"' in response.content, "chunks came before the failure"
    if fault == "error-event":  # the backend's own event, relayed as it came
        assert openai_error(response.content)["message"] == "Emulated failure mid-stream."
    else:
        assert openai_error(response.content)["code"] == code
    await assert_not_retried(rig, code, fault)


@BY_FAULT
async def test_anthropic_messages_stream_ends_with_event_error(
    start_emulator: StartEmulator, start_gateway: StartGateway, fault: str
) -> None:
    rig, code = await broken_rig(start_emulator, start_gateway, fault)
    body = {"model": ROUTE, "max_tokens": 12, "messages": ASK, "stream": True}
    response = await rig.client.post("/v1/messages", json=body)
    assert response.status_code == 200
    events = sse_events(response.content)
    names = [name for name, _ in events]
    assert names[0] == "message_start" and "content_block_delta" in names
    assert "message_stop" not in names, "a failed stream must not look finished"
    name, data = events[-1]
    assert name == "error" and data["type"] == "error" and data["error"]["message"]
    await assert_not_retried(rig, code, fault)


@BY_FAULT
async def test_responses_stream_ends_failed(
    start_emulator: StartEmulator, start_gateway: StartGateway, fault: str
) -> None:
    rig, code = await broken_rig(start_emulator, start_gateway, fault)
    body = {"model": ROUTE, "max_output_tokens": 16, "input": ASK, "stream": True}
    response = await rig.client.post("/v1/responses", json=body)
    assert response.status_code == 200
    events = sse_events(response.content)
    names = [name for name, _ in events]
    assert "response.output_text.delta" in names
    assert "response.completed" not in names
    (error_name, error), (failed_name, failed) = events[-2:]
    assert error_name == "error" and error["code"] == code
    assert failed_name == "response.failed" and failed["response"]["status"] == "failed"
    await assert_not_retried(rig, code, fault)


async def test_cut_before_any_chunk_is_retried(
    start_emulator: StartEmulator, start_gateway: StartGateway
) -> None:
    """A stream cut before its first data chunk has sent the client nothing: retried."""
    rig = await start_rig(start_emulator, start_gateway)
    rig.fault("a", cut_stream_after_chunks=0)
    response = await rig.client.post("/v1/chat/completions", json=chat(stream=True))
    assert response.status_code == 200
    assert response.headers["x-switchyard-backend"] == "b"
    assert response.content.rstrip().endswith(b"data: [DONE]")
    assert rig.received() == {"a": 1, "b": 1}
    record = await rig.last_record()
    assert attempts(record) == [("a", "upstream_protocol_error"), ("b", "ok")]
    assert record.error is None and rig.cost_usd(record) > 0


async def test_a_stream_past_the_request_deadline_is_not_the_backends_failure(
    start_emulator: StartEmulator, start_gateway: StartGateway
) -> None:
    """The gateway's own deadline ends a slow but live stream: an error event, and no
    failure counted against the backend (one would eject it here)."""
    health = {"active_probes": False, "consecutive_failures": 1}
    rig = await start_rig(
        start_emulator,
        start_gateway,
        token_delay_ms=100,
        timeouts={"total_s": 0.5},
        health=health,
    )
    response = await rig.client.post("/v1/chat/completions", json=chat(stream=True, max_tokens=50))
    assert openai_error(response.content)["code"] == "request_deadline"
    assert rig.received() == {"a": 1, "b": 0}
    record = await rig.last_record()
    assert (record.backend, record.error) == ("a", "request_deadline")
    state = rig.health()["a"]
    assert state["healthy"] and state["failures"] == 0 and state["ejections"] == 0
