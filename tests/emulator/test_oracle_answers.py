"""``answers="oracle"``: JSON, tool calls and short answers that are right, in every format,
streamed or not; other requests still get the usual words."""

from __future__ import annotations

from collections.abc import AsyncIterator
from typing import Any

import httpx
import jsonschema
import orjson
import pytest

from emulator.server import EmulatorServer
from tests.emulator.conftest import (
    ANTHROPIC_HEADERS,
    MODEL,
    StartEmulator,
    chat_request,
    sse_events,
    sse_payloads,
)

PERSON = {
    "type": "object",
    "properties": {
        "full_name": {"type": "string"},
        "age": {"type": "integer"},
        "role": {"type": "string", "enum": ["engineer", "designer", "manager"]},
        "remote": {"type": "boolean"},
    },
    "required": ["full_name", "age", "role", "remote"],
    "additionalProperties": False,
}
PARAGRAPH = (
    "Extract the person below as JSON.\n\nDana joined us in spring. Her full name is Dana "
    "Reyes, her age is 34, and her role is Designer. Remote: yes."
)
DANA = {"full_name": "Dana Reyes", "age": 34, "role": "designer", "remote": True}


def _function(name: str, properties: dict[str, Any]) -> dict[str, Any]:
    parameters = {"type": "object", "properties": properties, "required": list(properties)}
    return {"type": "function", "function": {"name": name, "parameters": parameters}}


WEATHER = _function(
    "get_weather",
    {"city": {"type": "string"}, "unit": {"type": "string", "enum": ["celsius", "fahrenheit"]}},
)
TICKET = _function(
    "create_ticket",
    {
        "title": {"type": "string"},
        "priority": {"type": "string", "enum": ["low", "high"]},
        "assignee": {"type": "string"},
    },
)
ASK_TICKET = (
    "Please use create_ticket. title: Printer jammed, priority: high, assignee: Sam Okafor."
)
TICKET_ARGUMENTS = {"title": "Printer jammed", "priority": "high", "assignee": "Sam Okafor"}
FACTS = "Codes.\nThe code for Maple is QX-4821.\nThe code for Oak is AB-0012.\n"


@pytest.fixture
async def oracle(start_emulator: StartEmulator) -> EmulatorServer:
    return await start_emulator(answers="oracle", ignore_eos=False)


@pytest.fixture
async def http(oracle: EmulatorServer) -> AsyncIterator[httpx.AsyncClient]:
    async with httpx.AsyncClient(base_url=oracle.origin, timeout=10) as client:
        yield client


def _user(text: str) -> list[dict[str, Any]]:
    return [{"role": "user", "content": text}]


async def _chat(http: httpx.AsyncClient, stream: bool, **fields: Any) -> dict[str, Any]:
    """The answer's message and finish reason, from a whole body or put back from chunks."""
    body = chat_request(stream=stream, **fields)
    response = await http.post("/v1/chat/completions", json=body)
    assert response.status_code == 200, response.text
    if not stream:
        [choice] = response.json()["choices"]
        return {**choice["message"], "finish_reason": choice["finish_reason"]}
    chunks = [p for p in sse_payloads(response.text) if p != "[DONE]"]
    deltas = [chunk["choices"][0]["delta"] for chunk in chunks if chunk["choices"]]
    text = "".join(delta.get("content") or "" for delta in deltas)
    calls = [call for delta in deltas for call in delta.get("tool_calls") or ()]
    message: dict[str, Any] = {"content": text or None}
    if calls:
        name = calls[0]["function"]["name"]
        arguments = "".join(call["function"].get("arguments") or "" for call in calls)
        message["tool_calls"] = [{"function": {"name": name, "arguments": arguments}}]
    return {**message, "finish_reason": chunks[-1]["choices"][0]["finish_reason"]}


@pytest.mark.parametrize("stream", [False, True])
async def test_a_json_schema_answer_validates_and_carries_the_stated_values(
    http: httpx.AsyncClient, stream: bool
) -> None:
    schema_format = {"name": "person", "schema": PERSON, "strict": True}
    message = await _chat(
        http,
        stream,
        messages=_user(PARAGRAPH),
        response_format={"type": "json_schema", "json_schema": schema_format},
    )
    document = orjson.loads(message["content"])
    jsonschema.validate(document, PERSON)
    assert document == DANA
    assert message["finish_reason"] == "stop"


@pytest.mark.parametrize(
    ("ask", "tool_choice", "name", "arguments"),
    [
        (ASK_TICKET, None, "create_ticket", TICKET_ARGUMENTS),
        ("Weather for city: Oslo, unit: fahrenheit.", None, "get_weather", None),
        (ASK_TICKET, "required", "create_ticket", TICKET_ARGUMENTS),
        (
            ASK_TICKET,
            {"type": "function", "function": {"name": "get_weather"}},
            "get_weather",
            None,
        ),
    ],
)
@pytest.mark.parametrize("stream", [False, True])
async def test_a_tool_call_names_the_asked_tool_with_valid_stated_arguments(
    http: httpx.AsyncClient,
    stream: bool,
    ask: str,
    tool_choice: object,
    name: str,
    arguments: dict[str, Any] | None,
) -> None:
    fields: dict[str, Any] = {"messages": _user(ask), "tools": [WEATHER, TICKET]}
    if tool_choice is not None:
        fields["tool_choice"] = tool_choice
    message = await _chat(http, stream, **fields)
    [call] = message["tool_calls"]
    assert call["function"]["name"] == name
    sent = orjson.loads(call["function"]["arguments"])
    schema = next(t for t in (WEATHER, TICKET) if t["function"]["name"] == name)
    jsonschema.validate(sent, schema["function"]["parameters"])
    if arguments is not None:
        assert sent == arguments
    assert message["finish_reason"] == "tool_calls"


async def test_the_weather_arguments_come_from_the_prompt(http: httpx.AsyncClient) -> None:
    message = await _chat(
        http, False, messages=_user("city: Oslo, unit: fahrenheit."), tools=[WEATHER, TICKET]
    )
    arguments = orjson.loads(message["tool_calls"][0]["function"]["arguments"])
    assert arguments == {"city": "Oslo", "unit": "fahrenheit"}


async def test_a_tool_result_is_answered_in_text(http: httpx.AsyncClient) -> None:
    call = {"id": "c1", "type": "function", "function": {"name": "get_weather", "arguments": "{}"}}
    messages = [
        *_user("Weather for city: Oslo, unit: celsius."),
        {"role": "assistant", "content": None, "tool_calls": [call]},
        {"role": "tool", "tool_call_id": "c1", "content": "sunny, 21 degrees"},
    ]
    message = await _chat(http, False, messages=messages, tools=[WEATHER], max_tokens=8)
    assert message.get("tool_calls") is None and message["content"]


@pytest.mark.parametrize(
    ("question", "answer"),
    [
        ("What is 37 + 48? Answer with the number only.", "85"),
        ("What is 512 - 977?", "-465"),
        ("What is 123 * 45?", "5535"),
        (f"{FACTS}What is the code for Oak? Answer with the code only.", "AB-0012"),
        (f"{FACTS}What is the code for Elm?", "I do not know."),
    ],
)
@pytest.mark.parametrize("stream", [False, True])
async def test_a_short_question_gets_the_right_answer_as_the_whole_text(
    http: httpx.AsyncClient, stream: bool, question: str, answer: str
) -> None:
    message = await _chat(http, stream, messages=_user(question), max_tokens=32)
    assert (message["content"], message["finish_reason"]) == (answer, "stop")


async def test_usage_and_logprobs_count_the_answers_tokens(http: httpx.AsyncClient) -> None:
    request = chat_request(messages=_user("What is 123 * 45?"), logprobs=True, top_logprobs=2)
    body = (await http.post("/v1/chat/completions", json=request)).json()
    entries = body["choices"][0]["logprobs"]["content"]
    assert "".join(entry["token"] for entry in entries) == "5535"
    assert body["usage"]["completion_tokens"] == len(entries) == 1


async def test_json_object_holds_a_short_answer(http: httpx.AsyncClient) -> None:
    message = await _chat(
        http, False, messages=_user("What is 2 + 2?"), response_format={"type": "json_object"}
    )
    assert orjson.loads(message["content"]) == {"answer": "4"}


async def test_other_prompts_get_the_same_words_as_a_filler_engine(
    http: httpx.AsyncClient, start_emulator: StartEmulator
) -> None:
    filler = await start_emulator(ignore_eos=False)
    request = chat_request(messages=_user("Tell me a story about trains."), max_tokens=40)
    asked = (await http.post("/v1/chat/completions", json=request)).json()
    async with httpx.AsyncClient(base_url=filler.origin, timeout=10) as client:
        usual = (await client.post("/v1/chat/completions", json=request)).json()
    assert asked["choices"][0]["message"] == usual["choices"][0]["message"]
    sum_request = chat_request(messages=_user("What is 37 + 48?"), max_tokens=40)
    async with httpx.AsyncClient(base_url=filler.origin, timeout=10) as client:
        filled = (await client.post("/v1/chat/completions", json=sum_request)).json()
    assert filled["choices"][0]["message"]["content"] != "85"


ANTHROPIC_TICKET = {
    "name": TICKET["function"]["name"],
    "input_schema": TICKET["function"]["parameters"],
}


async def _messages(http: httpx.AsyncClient, **fields: Any) -> httpx.Response:
    body = {"model": MODEL, "max_tokens": 64, **fields}
    return await http.post("/v1/messages", json=body, headers=ANTHROPIC_HEADERS)


async def test_anthropic_gets_a_tool_use_with_the_stated_input(http: httpx.AsyncClient) -> None:
    weather = {"name": "get_weather", "input_schema": WEATHER["function"]["parameters"]}
    tools = [weather, ANTHROPIC_TICKET]
    message = (await _messages(http, messages=_user(ASK_TICKET), tools=tools)).json()
    [block] = message["content"]
    assert (block["type"], block["name"]) == ("tool_use", "create_ticket")
    assert block["input"] == TICKET_ARGUMENTS
    assert message["stop_reason"] == "tool_use"
    streamed = await _messages(http, messages=_user(ASK_TICKET), tools=tools, stream=True)
    events = [data for _, data in sse_events(streamed.text)]
    partial = "".join(
        event["delta"]["partial_json"] for event in events if event["type"] == "content_block_delta"
    )
    assert orjson.loads(partial) == TICKET_ARGUMENTS


@pytest.mark.parametrize("stream", [False, True])
async def test_anthropic_gets_the_short_answer_as_its_text(
    http: httpx.AsyncClient, stream: bool
) -> None:
    response = await _messages(
        http, messages=_user(f"{FACTS}What is the code for Maple?"), stream=stream
    )
    if stream:
        events = [data for _, data in sse_events(response.text)]
        deltas = [e["delta"] for e in events if e["type"] == "content_block_delta"]
        text = "".join(delta["text"] for delta in deltas)
        stop = events[-2]["delta"]["stop_reason"]
    else:
        message = response.json()
        text, stop = message["content"][0]["text"], message["stop_reason"]
    assert (text, stop) == ("QX-4821", "end_turn")


async def test_gemini_gets_json_that_carries_the_stated_values(http: httpx.AsyncClient) -> None:
    body = {
        "contents": [{"role": "user", "parts": [{"text": PARAGRAPH}]}],
        "generationConfig": {
            "responseMimeType": "application/json",
            "responseJsonSchema": PERSON,
        },
    }
    response = await http.post(f"/v1beta/models/{MODEL}:generateContent", json=body)
    assert response.status_code == 200, response.text
    [part] = response.json()["candidates"][0]["content"]["parts"]
    assert orjson.loads(part["text"]) == DANA
