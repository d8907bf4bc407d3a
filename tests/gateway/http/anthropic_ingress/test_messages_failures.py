"""`/v1/messages` when things go wrong: retries before the first byte, errors mid-stream,
keys, malformed bodies and limits, all answered in Anthropic's error shape."""

from __future__ import annotations

from typing import Any

import httpx
import pytest

from tests.conftest import RunningGateway, StartEmulator, StartGateway, make_config
from tests.gateway.http.anthropic_ingress.sse import anthropic_events, streamed_text
from tests.gateway.http.conftest import StartBehindFaulty, assert_retried_on_the_spare

MESSAGES: dict[str, Any] = {
    "model": "default",
    "max_tokens": 20,
    "messages": [{"role": "user", "content": "hello there"}],
}
STREAM = {**MESSAGES, "stream": True}


def assert_anthropic_error(response: httpx.Response, status: int, kind: str) -> str:
    assert response.status_code == status, response.text
    assert response.headers["content-type"].startswith("application/json")
    body = response.json()
    assert body["type"] == "error" and set(body["error"]) == {"type", "message"}
    assert body["error"]["type"] == kind and body["error"]["message"]
    message: str = body["error"]["message"]
    return message


@pytest.mark.parametrize("body", [MESSAGES, STREAM], ids=["whole", "stream"])
async def test_failure_before_the_first_byte_is_retried_elsewhere(
    start_behind_faulty: StartBehindFaulty, body: dict[str, Any]
) -> None:
    gw, _ = await start_behind_faulty({"fail_status": 500})
    response = await gw.client.post("/v1/messages", json=body)
    await assert_retried_on_the_spare(gw, response)
    if body.get("stream"):
        assert anthropic_events(response.content)[-1][0] == "message_stop"


@pytest.mark.parametrize(
    ("faults", "message"),
    [
        ({"error_event_after_chunks": 3}, "backend ended the stream"),
        ({"cut_stream_after_chunks": 3}, "broke the connection"),
    ],
    ids=["backend error event", "connection cut"],
)
async def test_failure_mid_stream_ends_with_an_error_event(
    start_behind_faulty: StartBehindFaulty, faults: dict[str, int], message: str
) -> None:
    gw, spare = await start_behind_faulty(faults)
    response = await gw.client.post("/v1/messages", json=STREAM)
    assert response.status_code == 200
    events = anthropic_events(response.content)
    kinds = [kind for kind, _ in events]
    assert kinds[0] == "message_start" and kinds[-1] == "error"
    assert "message_stop" not in kinds, "never a silent or tidy-looking truncation"
    assert streamed_text(events), "what came before the failure was relayed"
    error = events[-1][1]["error"]
    assert error["type"] == "api_error" and message in error["message"]
    assert spare.runtime.stats.received == 0, "no retry after the first byte"


async def test_keys_from_x_api_key_or_bearer(
    start_emulator: StartEmulator,
    start_gateway: StartGateway,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setenv("SY_ANTHROPIC_KEYS", "key-one")
    engine = await start_emulator()
    gw = await start_gateway(
        make_config({"only": engine.base_url}, server={"api_keys_env": "SY_ANTHROPIC_KEYS"})
    )
    version = {"anthropic-version": "2023-06-01"}
    for headers in (
        {},
        {"x-api-key": "wrong"},
        {"authorization": "Bearer wrong"},
        {"x-api-key": "wrong", "authorization": "Bearer also-wrong"},
    ):
        for path, body in (("/v1/messages", MESSAGES), ("/v1/messages/count_tokens", MESSAGES)):
            response = await gw.client.post(path, json=body, headers={**version, **headers})
            message = assert_anthropic_error(response, 401, "authentication_error")
            assert "wrong" not in message
    for headers in (
        {"x-api-key": "key-one"},
        {"authorization": "Bearer key-one"},
        {"x-api-key": "stale", "authorization": "Bearer key-one"},
    ):
        response = await gw.client.post(
            "/v1/messages", json=MESSAGES, headers={**version, **headers}
        )
        assert response.status_code == 200, (headers, response.text)


@pytest.mark.parametrize(
    ("content", "status", "kind", "names"),
    [
        (b"{not json", 400, "invalid_request_error", "JSON"),
        (b"[1, 2]", 400, "invalid_request_error", "JSON object"),
        (
            b'{"model": "default", "messages": [{"role": "user", "content": "x"}]}',
            400,
            "invalid_request_error",
            "max_tokens",
        ),
        (
            b'{"model": "default", "max_tokens": 5, "messages": []}',
            400,
            "invalid_request_error",
            "messages",
        ),
        (
            b'{"model": "nope", "max_tokens": 5, "messages": [{"role": "user", "content": "x"}]}',
            404,
            "not_found_error",
            "nope",
        ),
        (
            b'{"model": "default", "max_tokens": 5, "messages": [{"role": "user", "content": "'
            + b"x" * 5000
            + b'"}]}',
            413,
            "request_too_large",
            "4096",
        ),
    ],
    ids=["not json", "not an object", "no max_tokens", "no messages", "unknown route", "too large"],
)
async def test_bad_requests(
    small_body_gw: RunningGateway, content: bytes, status: int, kind: str, names: str
) -> None:
    response = await small_body_gw.client.post("/v1/messages", content=content)
    assert names in assert_anthropic_error(response, status, kind)
    assert "x-switchyard-decision" not in response.headers, "rejected before routing"


async def test_slo_headers_are_read(small_body_gw: RunningGateway) -> None:
    bad = await small_body_gw.client.post(
        "/v1/messages", json=MESSAGES, headers={"x-switchyard-ttft-ms": "soon"}
    )
    assert "x-switchyard-ttft-ms" in assert_anthropic_error(bad, 400, "invalid_request_error")
    good = await small_body_gw.client.post(
        "/v1/messages", json=MESSAGES, headers={"x-switchyard-ttft-ms": "5000"}
    )
    assert good.status_code == 200


async def test_wrong_method(small_body_gw: RunningGateway) -> None:
    response = await small_body_gw.client.get("/v1/messages")
    assert_anthropic_error(response, 405, "invalid_request_error")
    assert response.headers["allow"] == "POST"
