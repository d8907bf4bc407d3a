"""When the engine calls a tool: tools offered on a user's turn, or a call forced by
tool_choice; after a tool's result it answers in text, in every format."""

from __future__ import annotations

from typing import Any

import httpx
import pytest

from tests.emulator.conftest import ANTHROPIC_HEADERS, MODEL, chat_request
from tests.emulator.test_chat import TIME_TOOL, WEATHER_TOOL

ASKED = {"role": "user", "content": "Weather in Oslo?"}
CALLED = {
    "role": "assistant",
    "content": None,
    "tool_calls": [
        {"id": "call_1", "type": "function", "function": {"name": "get_weather", "arguments": "{}"}}
    ],
}
ANSWERED = {"role": "tool", "tool_call_id": "call_1", "content": "sunny, 21 degrees"}
NAMED = {"type": "function", "function": {"name": "get_time"}}


@pytest.mark.parametrize(
    ("messages", "tool_choice", "called"),
    [
        ([ASKED], None, "get_weather"),
        ([ASKED], "auto", "get_weather"),
        ([ASKED, CALLED, ANSWERED], None, None),
        ([ASKED, CALLED, ANSWERED], "auto", None),
        ([ASKED, CALLED, ANSWERED], "required", "get_weather"),
        ([ASKED, CALLED, ANSWERED], NAMED, "get_time"),
        ([ASKED, {"role": "assistant", "content": "Let me see."}], None, None),
        (
            [ASKED, CALLED, ANSWERED, {"role": "user", "content": "And tomorrow?"}],
            None,
            "get_weather",
        ),
        ([ASKED], "none", None),
    ],
)
async def test_openai_calls_a_tool_on_a_users_turn_or_when_forced(
    client: httpx.AsyncClient,
    messages: list[dict[str, Any]],
    tool_choice: object,
    called: str | None,
) -> None:
    request = chat_request(messages=messages, tools=[WEATHER_TOOL, TIME_TOOL], max_tokens=5)
    if tool_choice is not None:
        request["tool_choice"] = tool_choice
    response = await client.post("/chat/completions", json=request)
    assert response.status_code == 200, response.text
    [choice] = response.json()["choices"]
    calls = choice["message"].get("tool_calls")
    if called is None:
        assert calls is None and choice["message"]["content"]
        assert choice["finish_reason"] in ("stop", "length")
    else:
        assert [call["function"]["name"] for call in calls] == [called]
        assert choice["finish_reason"] == "tool_calls"


ANTHROPIC_TOOL = {
    "name": "get_weather",
    "input_schema": {"type": "object", "properties": {"city": {"type": "string"}}},
}


@pytest.mark.parametrize(("tool_choice", "block"), [(None, "text"), ({"type": "any"}, "tool_use")])
async def test_anthropic_answers_a_tool_result_in_text_unless_forced(
    root_client: httpx.AsyncClient, tool_choice: dict[str, str] | None, block: str
) -> None:
    use = {"type": "tool_use", "id": "toolu_1", "name": "get_weather", "input": {"city": "Oslo"}}
    result = {"type": "tool_result", "tool_use_id": "toolu_1", "content": "sunny"}
    request: dict[str, Any] = {
        "model": MODEL,
        "max_tokens": 5,
        "tools": [ANTHROPIC_TOOL],
        "messages": [
            {"role": "user", "content": "Weather in Oslo?"},
            {"role": "assistant", "content": [use]},
            {"role": "user", "content": [result]},
        ],
    }
    if tool_choice is not None:
        request["tool_choice"] = tool_choice
    response = await root_client.post("/v1/messages", json=request, headers=ANTHROPIC_HEADERS)
    assert response.status_code == 200, response.text
    message = response.json()
    assert [content["type"] for content in message["content"]] == [block]
    assert (message["stop_reason"] == "tool_use") == (block == "tool_use")
    first_turn = {**request, "messages": request["messages"][:1]}
    first_turn.pop("tool_choice", None)
    asked = await root_client.post("/v1/messages", json=first_turn, headers=ANTHROPIC_HEADERS)
    assert asked.json()["stop_reason"] == "tool_use"


@pytest.mark.parametrize(("mode", "calls"), [("AUTO", False), ("ANY", True)])
async def test_gemini_answers_a_function_response_in_text_unless_forced(
    root_client: httpx.AsyncClient, mode: str, calls: bool
) -> None:
    declaration = {"name": "get_weather", "parameters": {"type": "OBJECT"}}
    contents = [
        {"role": "user", "parts": [{"text": "Weather in Oslo?"}]},
        {"role": "model", "parts": [{"functionCall": {"name": "get_weather", "args": {}}}]},
        {"role": "user", "parts": [{"functionResponse": {"name": "get_weather", "response": {}}}]},
    ]
    request = {
        "contents": contents,
        "tools": [{"functionDeclarations": [declaration]}],
        "toolConfig": {"functionCallingConfig": {"mode": mode}},
        "generationConfig": {"maxOutputTokens": 5},
    }
    path = f"/v1beta/models/{MODEL}:generateContent"
    response = await root_client.post(path, json=request)
    assert response.status_code == 200, response.text
    [part] = response.json()["candidates"][0]["content"]["parts"]
    assert ("functionCall" in part) == calls
    asked = await root_client.post(path, json={**request, "contents": contents[:1]})
    assert "functionCall" in asked.json()["candidates"][0]["content"]["parts"][0]
