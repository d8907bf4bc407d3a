"""`/v1/responses` when things go wrong: retries before the first byte, failures mid-stream,
what a stateless gateway refuses, keys, malformed bodies and limits, all answered in
OpenAI's error shape."""

from __future__ import annotations

from typing import Any

import pytest

from tests.conftest import RunningGateway, StartEmulator, StartGateway, make_config
from tests.gateway.http.conftest import (
    StartBehindFaulty,
    assert_openai_error,
    assert_retried_on_the_spare,
)
from tests.gateway.http.responses_ingress.sse import kinds, response_events, streamed_text

REQUEST: dict[str, Any] = {"model": "default", "input": "hello there", "max_output_tokens": 20}
STREAM = {**REQUEST, "stream": True}


@pytest.mark.parametrize("body", [REQUEST, STREAM], ids=["whole", "stream"])
async def test_failure_before_the_first_byte_is_retried_elsewhere(
    start_behind_faulty: StartBehindFaulty, body: dict[str, Any]
) -> None:
    gw, _ = await start_behind_faulty({"fail_status": 500})
    response = await gw.client.post("/v1/responses", json=body)
    await assert_retried_on_the_spare(gw, response)
    if body.get("stream"):
        assert kinds(response_events(response.content))[-1] == "response.incomplete"


async def test_no_backend_left_is_an_openai_error(
    start_emulator: StartEmulator, start_gateway: StartGateway
) -> None:
    failing = await start_emulator(faults={"fail_status": 503})
    gw = await start_gateway(make_config({"a": failing.base_url}))
    response = await gw.client.post("/v1/responses", json=STREAM)
    error = assert_openai_error(response, 502, "upstream_503")
    assert error["type"] == "upstream_error"
    assert "x-switchyard-decision" in response.headers


@pytest.mark.parametrize(
    ("faults", "code", "message"),
    [
        ({"error_event_after_chunks": 3}, "upstream_stream_error", "backend ended the stream"),
        ({"cut_stream_after_chunks": 3}, "upstream_protocol_error", "broke the connection"),
    ],
    ids=["backend error event", "connection cut"],
)
async def test_failure_mid_stream_ends_as_failed(
    start_behind_faulty: StartBehindFaulty, faults: dict[str, int], code: str, message: str
) -> None:
    gw, spare = await start_behind_faulty(faults)
    response = await gw.client.post("/v1/responses", json=STREAM)
    assert response.status_code == 200
    events = response_events(response.content)
    order = kinds(events)
    assert order[:2] == ["response.created", "response.in_progress"]
    assert order[-2:] == ["error", "response.failed"]
    assert "response.completed" not in order and "response.output_item.done" not in order
    assert streamed_text(events), "what came before the failure was relayed"
    error = events[-2]
    assert error["code"] == code and message in error["message"]
    failed = events[-1]["response"]
    assert failed["status"] == "failed" and failed["error"]["code"] == "server_error"
    [item] = failed["output"]
    assert item["status"] == "incomplete"
    assert item["content"][0]["text"] == streamed_text(events)
    assert spare.runtime.stats.received == 0, "no retry after the first byte"


WEB_SEARCH = [{"type": "web_search"}]
IMAGE_BY_FILE = {"type": "input_image", "file_id": "file-1", "detail": "auto"}


@pytest.mark.parametrize(
    ("fields", "param", "names"),
    [
        ({"previous_response_id": "resp_1"}, "previous_response_id", "stateless"),
        ({"store": True}, "store", "stateless"),
        ({"background": True}, "background", "stateless"),
        ({"conversation": "conv_1"}, "conversation", "stateless"),
        ({"prompt": {"id": "pmpt_1"}}, "prompt", "stateless"),
        ({"tools": WEB_SEARCH}, "tools.0.type", "web_search"),
        ({"tool_choice": {"type": "file_search"}}, "tool_choice", "file_search"),
        ({"input": [{"type": "item_reference", "id": "msg_1"}]}, "input.0.type", "stateless"),
        ({"input": [{"type": "computer_call_output"}]}, "input.0.type", "computer_call_output"),
        (
            {"input": [{"role": "user", "content": [IMAGE_BY_FILE]}]},
            "input.0.content.0.file_id",
            "file id",
        ),
        ({"input": []}, "input", "at least 1"),
        ({"max_output_tokens": 0}, "max_output_tokens", "greater than or equal to 1"),
        ({"tool_choice": "required"}, "tool_choice", "requires tools"),
    ],
    ids=lambda value: value if isinstance(value, str) else None,
)
async def test_refused_with_the_parameter_named(
    small_body_gw: RunningGateway, fields: dict[str, Any], param: str, names: str
) -> None:
    response = await small_body_gw.client.post("/v1/responses", json={**REQUEST, **fields})
    error = assert_openai_error(response, 400, "invalid_request")
    assert error["type"] == "invalid_request_error" and error["param"] == param
    assert names in error["message"]
    assert "x-switchyard-decision" not in response.headers, "refused before routing"


@pytest.mark.parametrize(
    ("content", "status", "code", "names"),
    [
        (b"{not json", 400, "invalid_request", "JSON"),
        (b"[1, 2]", 400, "invalid_request", "JSON object"),
        (b'{"model": "default"}', 400, "invalid_request", "input"),
        (b'{"model": "nope", "input": "x"}', 404, "model_not_found", "nope"),
        (
            b'{"model": "default", "input": "' + b"x" * 5000 + b'"}',
            413,
            "request_too_large",
            "4096",
        ),
    ],
    ids=["not json", "not an object", "no input", "unknown route", "too large"],
)
async def test_bad_requests(
    small_body_gw: RunningGateway, content: bytes, status: int, code: str, names: str
) -> None:
    response = await small_body_gw.client.post("/v1/responses", content=content)
    assert names in assert_openai_error(response, status, code)["message"]


async def test_keys_are_checked(
    start_emulator: StartEmulator,
    start_gateway: StartGateway,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setenv("SY_RESPONSES_KEYS", "key-one")
    engine = await start_emulator()
    gw = await start_gateway(
        make_config({"only": engine.base_url}, server={"api_keys_env": "SY_RESPONSES_KEYS"})
    )
    for headers in ({}, {"authorization": "Bearer wrong"}):
        response = await gw.client.post("/v1/responses", json=REQUEST, headers=headers)
        error = assert_openai_error(response, 401, "invalid_api_key")
        assert error["type"] == "authentication_error" and "wrong" not in error["message"]
    response = await gw.client.post(
        "/v1/responses", json=REQUEST, headers={"authorization": "Bearer key-one"}
    )
    assert response.status_code == 200, response.text


async def test_wrong_method(small_body_gw: RunningGateway) -> None:
    response = await small_body_gw.client.get("/v1/responses")
    assert_openai_error(response, 405, "method_not_allowed")
    assert response.headers["allow"] == "POST"
