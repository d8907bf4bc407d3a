"""Bounds on bad input, per ingress: every request over a bound gets a 4xx in its own API's
error shape naming the field and the limit; an answer over the upstream caps ends in an
explicit error, whole or streamed; and the gateway keeps serving."""

from __future__ import annotations

from typing import Any

import httpx
import orjson
import pytest

from gateway.config.bounds import check_depth
from gateway.errors import InvalidRequest
from tests.conftest import RunningGateway, StartEmulator, StartGateway, make_config
from tests.gateway.http.conftest import assert_openai_error

BOUNDS = {
    "max_json_depth": 10,
    "max_messages": 3,
    "max_tools": 2,
    "max_output_tokens": 100,
    "max_n": 2,
    "max_name_chars": 16,
}
USER = {"role": "user", "content": "hi"}
FUNCTION = {"type": "function", "function": {"name": "f", "parameters": {"type": "object"}}}
ANTHROPIC_TOOL = {"name": "f", "input_schema": {"type": "object"}}
RESPONSES_TOOL = {"type": "function", "name": "f", "parameters": {"type": "object"}}


def nested(levels: int) -> Any:
    value: Any = "deep"
    for _ in range(levels):
        value = {"x": value}
    return value


def chat(**fields: Any) -> dict[str, Any]:
    return {"model": "default", "messages": [USER], **fields}


def messages(**fields: Any) -> dict[str, Any]:
    return {"model": "default", "max_tokens": 10, "messages": [USER], **fields}


def responses(**fields: Any) -> dict[str, Any]:
    return {"model": "default", "input": "hi", **fields}


@pytest.fixture
async def gw(start_emulator: StartEmulator, start_gateway: StartGateway) -> RunningGateway:
    engine = await start_emulator()
    return await start_gateway(make_config({"only": engine.base_url}, bounds=BOUNDS))


OPENAI_CASES = [
    ("/v1/chat/completions", chat(messages=[USER] * 4), "messages", "limit of 3"),
    ("/v1/chat/completions", chat(tools=[FUNCTION] * 3), "tools", "limit of 2"),
    ("/v1/chat/completions", chat(max_tokens=101), "max_tokens", "limit of 100"),
    ("/v1/chat/completions", chat(max_completion_tokens=101), "max_completion_tokens", "100"),
    ("/v1/chat/completions", chat(n=3), "n", "limit of 2"),
    ("/v1/chat/completions", chat(model="m" * 17), "model", "limit of 16"),
    ("/v1/chat/completions", chat(user="u" * 17), "user", "limit of 16"),
    ("/v1/chat/completions", chat(metadata=nested(10)), None, "the limit is 10"),
    (
        "/v1/completions",
        {"model": "default", "prompt": "x", "max_tokens": 101},
        "max_tokens",
        "100",
    ),
    ("/v1/completions", {"model": "default", "prompt": "x", "n": 3}, "n", "limit of 2"),
    ("/v1/embeddings", {"model": "default", "input": "x", "user": "u" * 17}, "user", "16"),
    ("/v1/responses", responses(input=[USER] * 4), "input", "limit of 3"),
    ("/v1/responses", responses(tools=[RESPONSES_TOOL] * 3), "tools", "limit of 2"),
    ("/v1/responses", responses(max_output_tokens=101), "max_output_tokens", "limit of 100"),
    ("/v1/responses", responses(user="u" * 17), "user", "limit of 16"),
    ("/v1/responses", responses(text={"format": nested(10)}), None, "the limit is 10"),
]


@pytest.mark.parametrize(("path", "body", "param", "says"), OPENAI_CASES)
async def test_openai_shaped_ingresses_name_the_field_and_the_limit(
    gw: RunningGateway, path: str, body: dict[str, Any], param: str | None, says: str
) -> None:
    response = await gw.client.post(path, json=body)
    error = assert_openai_error(response, 400, "limit_exceeded")
    assert error["param"] == param and says in error["message"], error
    assert error["type"] == "invalid_request_error"


ANTHROPIC_CASES = [
    (messages(messages=[USER] * 4), "messages: 4 items, more than the limit of 3"),
    (messages(tools=[ANTHROPIC_TOOL] * 3), "tools: 3 items, more than the limit of 2"),
    (messages(max_tokens=101), "max_tokens: 101 is more than the limit of 100"),
    (messages(model="m" * 17), "model: 17 characters, more than the limit of 16"),
    (messages(metadata={"user_id": "u" * 17}), "metadata.user_id: 17 characters"),
    (messages(tools=[{"name": "f", "input_schema": nested(10)}]), "the limit is 10"),
]


@pytest.mark.parametrize(("body", "says"), ANTHROPIC_CASES)
@pytest.mark.parametrize("path", ["/v1/messages", "/v1/messages/count_tokens"])
async def test_the_messages_api_answers_in_anthropic_shape(
    gw: RunningGateway, path: str, body: dict[str, Any], says: str
) -> None:
    if path.endswith("count_tokens") and ("max_tokens" in says or "metadata" in says):
        return  # count_tokens reads only the prompt
    response = await gw.client.post(path, json=body)
    assert response.status_code == 400, response.text
    assert response.json() == {
        "type": "error",
        "error": {"type": "invalid_request_error", "message": response.json()["error"]["message"]},
    }
    assert says in response.json()["error"]["message"]


async def test_within_the_bounds_every_ingress_still_serves(gw: RunningGateway) -> None:
    at_limit = [
        ("/v1/chat/completions", chat(messages=[USER] * 3, max_tokens=100, n=2)),
        ("/v1/responses", responses(input=[USER] * 3, max_output_tokens=100)),
        ("/v1/messages", messages(messages=[USER] * 3, max_tokens=100)),
        ("/v1/chat/completions", chat(metadata=nested(8))),
    ]
    for path, body in at_limit:
        response = await gw.client.post(path, json=body)
        assert response.status_code == 200, (path, response.text)


@pytest.mark.parametrize(
    ("raw", "deepest"),
    [
        (orjson.dumps(nested(12)), 12),
        (orjson.dumps({"a": "[[[[[[[[[[[[[[[[[[[[[[[[" * 3}), None),  # brackets in strings
        (orjson.dumps({"a": ['\\"]' * 20, {"b": "\\\\" + "{" * 20}]}), None),
        (b"[" * 300 + b"]" * 300, 300),
    ],
)
def test_depth_counts_only_the_structure(raw: bytes, deepest: int | None) -> None:
    if deepest is None:
        check_depth(raw, 10)
        return
    with pytest.raises(InvalidRequest, match=f"nests {deepest} levels deep"):
        check_depth(raw, 10)


@pytest.mark.parametrize(
    ("path", "body"),
    [
        ("/v1/chat/completions", chat(metadata=nested(300))),
        ("/v1/responses", responses(text={"format": nested(300)})),
        ("/v1/messages", messages(tools=[{"name": "f", "input_schema": nested(300)}])),
    ],
)
async def test_too_deep_a_body_is_400_not_an_encoding_failure(
    start_emulator: StartEmulator, start_gateway: StartGateway, path: str, body: dict[str, Any]
) -> None:
    """orjson encodes 254 levels at most: a deeper body that the gateway re-encodes (its
    model renamed, or translated) was a 500 before the depth bound, whose most is 200."""
    engine = await start_emulator()
    config = make_config({"only": engine.base_url}, bounds={"max_json_depth": 200})
    gw = await start_gateway(config)
    response = await gw.client.post(path, json=body)
    assert response.status_code == 400, response.text
    assert "nests 30" in response.text
    near = {**chat(), "metadata": nested(195)}
    assert (await gw.client.post("/v1/chat/completions", json=near)).status_code == 200


async def _big_answer_gateway(
    start_emulator: StartEmulator, start_gateway: StartGateway
) -> RunningGateway:
    engine = await start_emulator()
    caps = {"max_upstream_body_bytes": 65_536, "max_upstream_stream_bytes": 65_536}
    return await start_gateway(make_config({"only": engine.base_url}, bounds=caps))


async def test_a_whole_answer_over_its_cap_is_a_502_tried_once(
    start_emulator: StartEmulator, start_gateway: StartGateway
) -> None:
    gw = await _big_answer_gateway(start_emulator, start_gateway)
    response = await gw.client.post("/v1/chat/completions", json=chat(max_tokens=40_000))
    error = assert_openai_error(response, 502, "upstream_response_too_large")
    assert "65536 bytes" in error["message"]
    decision_id = response.headers["x-switchyard-decision"]
    decision = (await gw.client.get(f"/v1/switchyard/decisions/{decision_id}")).json()
    assert [a["outcome"] for a in decision["attempts"]] == ["upstream_response_too_large"]
    assert (await gw.client.post("/v1/chat/completions", json=chat())).status_code == 200


@pytest.mark.parametrize(
    ("path", "body", "ending"),
    [
        ("/v1/chat/completions", chat(max_tokens=40_000, stream=True), b'data: {"error"'),
        ("/v1/messages", messages(max_tokens=40_000, stream=True), b"event: error"),
        ("/v1/responses", responses(max_output_tokens=40_000, stream=True), b"event: error"),
    ],
)
async def test_a_stream_over_its_cap_ends_with_an_error_event(
    start_emulator: StartEmulator,
    start_gateway: StartGateway,
    path: str,
    body: dict[str, Any],
    ending: bytes,
) -> None:
    gw = await _big_answer_gateway(start_emulator, start_gateway)
    async with gw.client.stream("POST", path, json=body) as response:
        assert response.status_code == 200
        relayed = b"".join([chunk async for chunk in response.aiter_bytes()])
    assert ending in relayed and b"65536 bytes" in relayed, relayed[-500:]
    assert b"[DONE]" not in relayed


def test_bounds_are_validated_at_start_up() -> None:
    from gateway.config.root import parse_config
    from gateway.errors import ConfigError

    config = make_config({"only": "http://127.0.0.1:1/v1"}, bounds={"max_n": 0, "extra": 1})
    with pytest.raises(ConfigError) as caught:
        parse_config(config)
    assert any(p.startswith("bounds.max_n") for p in caught.value.problems)
    assert any(p.startswith("bounds.extra") for p in caught.value.problems)


async def test_the_gateway_keeps_serving_after_refusals(gw: RunningGateway) -> None:
    for path, body, _, _ in OPENAI_CASES:
        await gw.client.post(path, json=body)
    response = await gw.client.post("/v1/chat/completions", json=chat())
    assert response.status_code == 200
    assert isinstance(response, httpx.Response)
