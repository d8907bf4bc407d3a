"""Anthropic's Messages API at /v1/messages: messages, streams, tools, thinking, errors, usage."""

from __future__ import annotations

from typing import Any

import httpx
import orjson
import pytest

from tests.emulator.conftest import (
    ANTHROPIC_HEADERS,
    MODEL,
    StartEmulator,
    sse_events,
    stats,
)

WEATHER = {
    "name": "get_weather",
    "description": "Weather for a city.",
    "input_schema": {
        "type": "object",
        "properties": {"city": {"type": "string"}, "days": {"type": "integer"}},
        "required": ["city", "days"],
    },
}
SYSTEM = "Answer in the style of a railway timetable. " * 40


def message_request(**fields: Any) -> dict[str, Any]:
    body: dict[str, Any] = {
        "model": MODEL,
        "max_tokens": 6,
        "messages": [{"role": "user", "content": "hello"}],
    }
    body.update(fields)
    return body


async def _post(http: httpx.AsyncClient, body: dict[str, Any], **headers: str) -> httpx.Response:
    return await http.post("/v1/messages", json=body, headers={**ANTHROPIC_HEADERS, **headers})


async def test_a_message_has_text_stop_reason_and_usage(root_client: httpx.AsyncClient) -> None:
    response = await _post(root_client, message_request())
    assert response.status_code == 200, response.text
    message = response.json()
    assert message["id"].startswith("msg_")
    assert (message["type"], message["role"], message["model"]) == ("message", "assistant", MODEL)
    [block] = message["content"]
    assert block["type"] == "text" and len(block["text"].split()) == 6
    assert (message["stop_reason"], message["stop_sequence"]) == ("max_tokens", None)
    assert message["usage"] == {
        "input_tokens": 1,
        "cache_creation_input_tokens": 0,
        "cache_read_input_tokens": 0,
        "output_tokens": 6,
    }


async def test_same_prompt_same_words_as_the_openai_door(root_client: httpx.AsyncClient) -> None:
    anthropic = (await _post(root_client, message_request())).json()
    chat = {"model": MODEL, "max_tokens": 6, "messages": [{"role": "user", "content": "hello"}]}
    openai = (await root_client.post("/v1/chat/completions", json=chat)).json()
    assert anthropic["content"][0]["text"] == openai["choices"][0]["message"]["content"]


async def test_stop_sequences_end_the_turn_with_the_sequence(
    root_client: httpx.AsyncClient,
) -> None:
    full = (await _post(root_client, message_request(max_tokens=12))).json()["content"][0]["text"]
    stop = full.split()[3]
    request = message_request(max_tokens=12, stop_sequences=["zzz", stop])
    message = (await _post(root_client, request)).json()
    assert (message["stop_reason"], message["stop_sequence"]) == ("stop_sequence", stop)
    assert stop not in message["content"][0]["text"]


async def test_the_stream_is_anthropics_event_sequence(root_client: httpx.AsyncClient) -> None:
    whole = (await _post(root_client, message_request())).json()
    response = await _post(root_client, message_request(stream=True))
    assert response.headers["content-type"] == "text/event-stream"
    events = sse_events(response.text)
    names = [name for name, _ in events]
    assert names == [
        "message_start",
        "ping",
        "content_block_start",
        *["content_block_delta"] * 6,
        "content_block_stop",
        "message_delta",
        "message_stop",
    ]
    assert all(data["type"] == name for name, data in events)
    start = events[0][1]["message"]
    assert start["content"] == [] and start["stop_reason"] is None
    assert start["usage"]["input_tokens"] == 1
    text = "".join(data["delta"]["text"] for name, data in events if name == "content_block_delta")
    assert text == whole["content"][0]["text"]
    delta = events[-2][1]
    assert delta["delta"] == {"stop_reason": "max_tokens", "stop_sequence": None}
    assert delta["usage"]["output_tokens"] == 6


async def test_tools_make_a_tool_use_block(root_client: httpx.AsyncClient) -> None:
    request = message_request(tools=[WEATHER], max_tokens=4)
    message = (await _post(root_client, request)).json()
    [block] = message["content"]
    assert block["type"] == "tool_use" and block["id"].startswith("toolu_")
    assert (block["name"], block["input"]) == ("get_weather", {"city": "example", "days": 1})
    assert message["stop_reason"] == "tool_use"
    # tool_choice none: no call; a named tool: that one.
    other = {**WEATHER, "name": "get_time"}
    none = (await _post(root_client, {**request, "tool_choice": {"type": "none"}})).json()
    assert none["content"][0]["type"] == "text"
    named = {
        **request,
        "tools": [WEATHER, other],
        "tool_choice": {"type": "tool", "name": "get_time"},
    }
    assert (await _post(root_client, named)).json()["content"][0]["name"] == "get_time"


async def test_streamed_tool_input_arrives_as_json_deltas(root_client: httpx.AsyncClient) -> None:
    response = await _post(root_client, message_request(tools=[WEATHER], stream=True))
    events = [data for _, data in sse_events(response.text)]
    start = next(event for event in events if event["type"] == "content_block_start")
    assert start["content_block"]["type"] == "tool_use" and start["content_block"]["input"] == {}
    partial = "".join(
        event["delta"]["partial_json"] for event in events if event["type"] == "content_block_delta"
    )
    assert orjson.loads(partial) == {"city": "example", "days": 1}
    assert events[-2]["delta"]["stop_reason"] == "tool_use"


async def test_a_tool_loop_turn_is_read(root_client: httpx.AsyncClient) -> None:
    call = {"type": "tool_use", "id": "toolu_1", "name": "get_weather", "input": {"city": "x"}}
    result = {
        "type": "tool_result",
        "tool_use_id": "toolu_1",
        "content": [{"type": "text", "text": "sunny"}],
    }
    messages = [
        {"role": "user", "content": [{"type": "text", "text": "Weather in x?"}]},
        {"role": "assistant", "content": [call]},
        {"role": "user", "content": [result]},
    ]
    request = message_request(system=[{"type": "text", "text": "Be brief."}], messages=messages)
    request |= {"tools": [WEATHER], "tool_choice": {"type": "none"}}
    response = await _post(root_client, request)
    assert response.status_code == 200, response.text
    assert response.json()["usage"]["input_tokens"] > 1


async def test_thinking_comes_first_within_max_tokens(root_client: httpx.AsyncClient) -> None:
    request = message_request(max_tokens=2000, thinking={"type": "enabled", "budget_tokens": 1024})
    message = (await _post(root_client, request)).json()
    thinking, text = message["content"]
    assert thinking["type"] == "thinking" and thinking["signature"]
    assert len(thinking["thinking"].split()) == 1000  # min(budget, max_tokens // 2)
    assert len(text["text"].split()) == 1000
    assert message["usage"]["output_tokens"] == 2000
    events = sse_events((await _post(root_client, {**request, "stream": True})).text)
    kinds = [data["delta"]["type"] for name, data in events if name == "content_block_delta"]
    assert kinds == ["thinking_delta"] * 1000 + ["signature_delta"] + ["text_delta"] * 1000
    streamed = "".join(data["delta"].get("thinking", "") for _, data in events if "delta" in data)
    assert streamed == thinking["thinking"]
    stops = [data["index"] for name, data in events if name == "content_block_stop"]
    assert stops == [0, 1]


async def test_a_repeated_prompt_reads_the_kv_cache(start_emulator: StartEmulator) -> None:
    server = await start_emulator(cost_model="batched", time_scale=0.01)
    async with httpx.AsyncClient(base_url=server.origin) as http:
        request = message_request(system=SYSTEM)
        first = (await _post(http, request)).json()["usage"]
        second = (await _post(http, request)).json()["usage"]
        streamed = sse_events((await _post(http, {**request, "stream": True})).text)
    assert first["cache_read_input_tokens"] == 0
    prompt = first["input_tokens"]
    assert second["cache_read_input_tokens"] > prompt // 2
    assert second["input_tokens"] + second["cache_read_input_tokens"] == prompt
    assert second["cache_creation_input_tokens"] == 0
    assert streamed[0][1]["message"]["usage"]["cache_read_input_tokens"] > prompt // 2


@pytest.mark.parametrize(
    ("body", "headers", "status", "error_type"),
    [
        (message_request(), {"anthropic-version": ""}, 400, "invalid_request_error"),
        (message_request(max_tokens=None), {}, 400, "invalid_request_error"),
        (message_request(messages=[]), {}, 400, "invalid_request_error"),
        (
            message_request(thinking={"type": "enabled", "budget_tokens": 10}),
            {},
            400,
            "invalid_request_error",
        ),
        (message_request(model="missing"), {}, 404, "not_found_error"),
    ],
)
async def test_bad_requests_get_anthropic_errors(
    root_client: httpx.AsyncClient,
    body: dict[str, Any],
    headers: dict[str, str],
    status: int,
    error_type: str,
) -> None:
    response = await _post(root_client, body, **headers)
    assert response.status_code == status
    error = response.json()
    assert error["type"] == "error" and error["error"]["type"] == error_type
    assert error["error"]["message"]


async def test_the_key_is_checked_when_configured(start_emulator: StartEmulator) -> None:
    server = await start_emulator(api_key="secret")
    async with httpx.AsyncClient(base_url=server.origin) as http:
        for headers in ({}, {"x-api-key": "wrong"}):
            refused = await _post(http, message_request(), **headers)
            assert refused.status_code == 401
            assert refused.json()["error"]["type"] == "authentication_error"
        assert (await _post(http, message_request(), **{"x-api-key": "secret"})).status_code == 200
        bearer = {"authorization": "Bearer secret"}
        assert (await _post(http, message_request(), **bearer)).status_code == 200
        assert (await http.get("/v1/models", headers=ANTHROPIC_HEADERS)).status_code == 401


@pytest.mark.parametrize(("status", "error_type"), [(529, "overloaded_error"), (500, "api_error")])
async def test_injected_failures_in_anthropics_shape(
    start_emulator: StartEmulator, status: int, error_type: str
) -> None:
    server = await start_emulator(faults={"fail_status": status, "retry_after_s": 2})
    async with httpx.AsyncClient(base_url=server.origin) as http:
        response = await _post(http, message_request())
    assert response.status_code == status
    assert response.headers["retry-after"] == "2"
    assert response.json() == {
        "type": "error",
        "error": {"type": error_type, "message": f"Emulated failure ({status})."},
    }


async def test_rate_limits_answer_429_with_anthropic_headers(
    start_emulator: StartEmulator,
) -> None:
    server = await start_emulator(
        rate_limit_requests_per_minute=2, rate_limit_tokens_per_minute=1000
    )
    async with httpx.AsyncClient(base_url=server.origin) as http:
        answers = [await _post(http, message_request()) for _ in range(3)]
    assert [answer.status_code for answer in answers] == [200, 200, 429]
    first, limited = answers[0].headers, answers[2]
    assert first["anthropic-ratelimit-requests-limit"] == "2"
    assert first["anthropic-ratelimit-requests-remaining"] == "1"
    assert first["anthropic-ratelimit-tokens-remaining"] == str(1000 - 1 - 6)
    assert first["anthropic-ratelimit-requests-reset"].endswith("Z")
    assert limited.json()["error"]["type"] == "rate_limit_error"
    assert limited.headers["anthropic-ratelimit-requests-remaining"] == "0"
    assert 0 < float(limited.headers["retry-after"]) <= 30


async def test_stream_faults_end_with_an_error_event_or_a_cut(
    start_emulator: StartEmulator,
) -> None:
    server = await start_emulator(faults={"error_event_after_chunks": 4})
    async with httpx.AsyncClient(base_url=server.origin) as http:
        events = sse_events((await _post(http, message_request(stream=True))).text)
        assert [name for name, _ in events][-2:] == ["content_block_delta", "error"]
        assert len(events) == 5
        assert events[-1][1]["error"]["type"] == "overloaded_error"
        await http.put("/emulator/faults", json={"cut_stream_after_chunks": 3})
        request = message_request(stream=True)
        async with http.stream(
            "POST", "/v1/messages", json=request, headers=ANTHROPIC_HEADERS
        ) as cut:
            with pytest.raises(httpx.RemoteProtocolError):
                await cut.aread()
        numbers = await stats(http)
    assert numbers["injected_cut_streams"] == 1


async def test_models_list_in_anthropics_shape(root_client: httpx.AsyncClient) -> None:
    listing = (await root_client.get("/v1/models?limit=1", headers=ANTHROPIC_HEADERS)).json()
    [model] = listing["data"]
    assert (model["type"], model["id"], model["display_name"]) == ("model", MODEL, MODEL)
    assert model["created_at"].endswith("Z")
    assert (listing["has_more"], listing["first_id"], listing["last_id"]) == (False, MODEL, MODEL)
    # Without Anthropic's headers the same path is OpenAI's list.
    assert (await root_client.get("/v1/models")).json()["object"] == "list"


async def test_needles_are_found_in_anthropic_prompts(root_client: httpx.AsyncClient) -> None:
    system = 'Notes. The secret value for key "k-1" is "blue42". More notes.'
    question = 'Reply with the secret value for key "k-1"'
    request = message_request(system=system, messages=[{"role": "user", "content": question}])
    message = (await _post(root_client, request)).json()
    assert message["content"][0]["text"] == "blue42"
    assert message["stop_reason"] == "end_turn"
