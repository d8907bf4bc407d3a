"""Responses requests into OpenAI chat requests: conversation items, options, refusals."""

from __future__ import annotations

from typing import Any

import orjson
import pytest

from gateway.config.bounds import DEFAULT_BOUNDS
from gateway.errors import InvalidRequest
from gateway.http.responses_ingress.request_translation import to_chat_request
from gateway.http.responses_ingress.responses_request import parse_responses_request

BASE: dict[str, Any] = {"model": "default"}
DATA_URL = "data:image/png;base64,iVBORw0KGgo="
TOOL = {"type": "function", "name": "get_weather", "parameters": {"type": "object"}}
CHAT_TOOL = {
    "type": "function",
    "function": {"name": "get_weather", "parameters": {"type": "object"}},
}


def translate(**fields: Any) -> dict[str, Any]:
    request = parse_responses_request(orjson.dumps({**BASE, **fields}))
    return dict(to_chat_request(request))


def text(value: str, kind: str = "input_text") -> dict[str, Any]:
    return {"type": kind, "text": value}


def call(
    call_id: str, name: str = "get_weather", arguments: str = '{"city":"Oslo"}'
) -> dict[str, Any]:
    return {
        "type": "function_call",
        "id": f"fc_{call_id}",
        "call_id": call_id,
        "name": name,
        "arguments": arguments,
    }


def chat_call(
    call_id: str, name: str = "get_weather", arguments: str = '{"city":"Oslo"}'
) -> dict[str, Any]:
    return {"id": call_id, "type": "function", "function": {"name": name, "arguments": arguments}}


def output(call_id: str, value: Any) -> dict[str, Any]:
    return {"type": "function_call_output", "call_id": call_id, "output": value}


@pytest.mark.parametrize(
    ("fields", "messages"),
    [
        pytest.param({"input": "hi"}, [{"role": "user", "content": "hi"}], id="string input"),
        pytest.param(
            {"instructions": "be brief", "input": "hi"},
            [{"role": "system", "content": "be brief"}, {"role": "user", "content": "hi"}],
            id="instructions first",
        ),
        pytest.param(
            {
                "input": [
                    {"role": "developer", "content": "rules"},
                    {"role": "user", "content": "hi"},
                ]
            },
            [{"role": "system", "content": "rules"}, {"role": "user", "content": "hi"}],
            id="developer reads as system",
        ),
        pytest.param(
            {"input": [{"type": "message", "role": "user", "content": [text("only")]}]},
            [{"role": "user", "content": "only"}],
            id="one text part as a string",
        ),
        pytest.param(
            {
                "input": [
                    {
                        "role": "user",
                        "content": [
                            text("what is"),
                            {"type": "input_image", "image_url": DATA_URL, "detail": "low"},
                            {"type": "input_image", "image_url": "https://x/y.png"},
                        ],
                    }
                ]
            },
            [
                {
                    "role": "user",
                    "content": [
                        {"type": "text", "text": "what is"},
                        {"type": "image_url", "image_url": {"url": DATA_URL, "detail": "low"}},
                        {"type": "image_url", "image_url": {"url": "https://x/y.png"}},
                    ],
                }
            ],
            id="text and images",
        ),
        pytest.param(
            {
                "input": [
                    {"role": "system", "content": [text("one"), text("two")]},
                    {
                        "type": "message",
                        "id": "msg_1",
                        "status": "completed",
                        "role": "assistant",
                        "content": [
                            {**text("sure", "output_text"), "annotations": []},
                            {"type": "refusal", "refusal": "but not that"},
                        ],
                    },
                ]
            },
            [
                {"role": "system", "content": "one\n\ntwo"},
                {"role": "assistant", "content": "sure\n\nbut not that"},
            ],
            id="system and assistant parts joined",
        ),
        pytest.param(
            {
                "input": [
                    {"role": "user", "content": "weather?"},
                    {"type": "reasoning", "id": "rs_1", "summary": [], "encrypted_content": "x"},
                    call("c1"),
                    call("c2", arguments="{}"),
                    output("c1", "sunny"),
                    output("c2", [text("rain"), text("later")]),
                ]
            },
            [
                {"role": "user", "content": "weather?"},
                {
                    "role": "assistant",
                    "content": None,
                    "tool_calls": [chat_call("c1"), chat_call("c2", arguments="{}")],
                },
                {"role": "tool", "tool_call_id": "c1", "content": "sunny"},
                {"role": "tool", "tool_call_id": "c2", "content": "rain\nlater"},
            ],
            id="calls join one assistant message, reasoning dropped",
        ),
        pytest.param(
            {
                "input": [
                    {"role": "assistant", "content": "let me look"},
                    call("c1"),
                    output("c1", [text("see"), {"type": "input_image", "image_url": DATA_URL}]),
                    output("c1", "again"),
                    {"role": "user", "content": "and?"},
                ]
            },
            [
                {"role": "assistant", "content": "let me look", "tool_calls": [chat_call("c1")]},
                {"role": "tool", "tool_call_id": "c1", "content": "see"},
                {"role": "tool", "tool_call_id": "c1", "content": "again"},
                {
                    "role": "user",
                    "content": [{"type": "image_url", "image_url": {"url": DATA_URL}}],
                },
                {"role": "user", "content": "and?"},
            ],
            id="a call joins the assistant's text; output images follow the tool messages",
        ),
        pytest.param(
            {"input": [call("c1"), output("c1", "ok"), call("c2")]},
            [
                {"role": "assistant", "content": None, "tool_calls": [chat_call("c1")]},
                {"role": "tool", "tool_call_id": "c1", "content": "ok"},
                {"role": "assistant", "content": None, "tool_calls": [chat_call("c2")]},
            ],
            id="a call after an output starts a new assistant message",
        ),
    ],
)
def test_conversation(fields: dict[str, Any], messages: list[dict[str, Any]]) -> None:
    assert translate(**fields)["messages"] == messages


@pytest.mark.parametrize(
    ("fields", "expected"),
    [
        pytest.param({}, {}, id="nothing asked"),
        pytest.param(
            {"stream": True},
            {"stream": True, "stream_options": {"include_usage": True}},
            id="stream",
        ),
        pytest.param(
            {"max_output_tokens": 64, "temperature": 0.5, "top_p": 0.9, "user": "u-1"},
            {"max_completion_tokens": 64, "temperature": 0.5, "top_p": 0.9, "user": "u-1"},
            id="sampling and user",
        ),
        pytest.param(
            {"reasoning": {"effort": "minimal", "summary": "auto"}},
            {"reasoning_effort": "minimal"},
            id="reasoning effort",
        ),
        pytest.param({"reasoning": {"summary": "auto"}}, {}, id="summary alone asks nothing"),
        pytest.param(
            {"text": {"format": {"type": "text"}, "verbosity": "low"}}, {}, id="plain text"
        ),
        pytest.param(
            {"text": {"format": {"type": "json_object"}}},
            {"response_format": {"type": "json_object"}},
            id="json object",
        ),
        pytest.param(
            {
                "text": {
                    "format": {
                        "type": "json_schema",
                        "name": "city",
                        "schema": {"type": "object"},
                        "description": "a city",
                        "strict": True,
                    }
                }
            },
            {
                "response_format": {
                    "type": "json_schema",
                    "json_schema": {
                        "name": "city",
                        "schema": {"type": "object"},
                        "description": "a city",
                        "strict": True,
                    },
                }
            },
            id="json schema",
        ),
        pytest.param(
            {
                "tools": [{**TOOL, "description": "weather", "strict": True}],
                "parallel_tool_calls": False,
            },
            {
                "tools": [
                    {
                        "type": "function",
                        "function": {
                            "name": "get_weather",
                            "description": "weather",
                            "parameters": {"type": "object"},
                            "strict": True,
                        },
                    }
                ],
                "parallel_tool_calls": False,
            },
            id="function tools",
        ),
        pytest.param(
            {"tools": [TOOL], "tool_choice": {"type": "function", "name": "get_weather"}},
            {
                "tools": [CHAT_TOOL],
                "tool_choice": {"type": "function", "function": {"name": "get_weather"}},
            },
            id="named tool choice",
        ),
        pytest.param(
            {"tools": [TOOL], "tool_choice": "required"},
            {"tools": [CHAT_TOOL], "tool_choice": "required"},
            id="required",
        ),
        pytest.param(
            {"tool_choice": "none", "parallel_tool_calls": True}, {}, id="no tools, no choice"
        ),
        pytest.param(
            {
                "store": False,
                "metadata": {"k": "v"},
                "include": ["reasoning.encrypted_content"],
                "truncation": "auto",
                "service_tier": "auto",
                "prompt_cache_key": "key",
                "previous_response_id": None,
            },
            {},
            id="accepted and not sent",
        ),
    ],
)
def test_options(fields: dict[str, Any], expected: dict[str, Any]) -> None:
    body = translate(input="hi", **fields)
    assert body == {
        "model": "default",
        "messages": [{"role": "user", "content": "hi"}],
        "stream": False,
        **expected,
    }


@pytest.mark.parametrize(
    ("fields", "param", "message"),
    [
        ({"previous_response_id": "resp_1"}, "previous_response_id", "stateless"),
        ({"store": True}, "store", "store: false"),
        ({"background": True}, "background", "stateless"),
        ({"conversation": {"id": "conv_1"}}, "conversation", "stateless"),
        ({"prompt": {"id": "pmpt_1"}}, "prompt", "instructions"),
        ({"tools": [TOOL, {"type": "file_search"}]}, "tools.1.type", "'file_search'"),
        ({"tools": [{"type": "custom", "name": "x"}]}, "tools.0.type", "'custom'"),
        ({"tool_choice": {"type": "allowed_tools"}}, "tool_choice", "'allowed_tools'"),
        ({"input": [{"type": "item_reference", "id": "x"}]}, "input.0.type", "item_reference"),
        ({"input": [{"type": "mcp_call"}]}, "input.0.type", "'mcp_call'"),
        (
            {"input": [{"role": "user", "content": [{"type": "input_file", "file_id": "f"}]}]},
            "input.0.content.0.type",
            "input_file",
        ),
        (
            {
                "input": [
                    {"role": "system", "content": [{"type": "input_image", "image_url": DATA_URL}]}
                ]
            },
            "input.0.content.0.type",
            "only user messages",
        ),
        (
            {"input": [output("c1", [{"type": "input_image", "file_id": "f"}])]},
            "input.0.output.0.file_id",
            "file id",
        ),
        ({"input": [{"role": "tool", "content": "x"}]}, "input.0.role", "Input should be"),
        (
            {"input": [{"role": "user", "content": [{"type": "input_text"}]}]},
            "input.0.content.0.text",
            "Field required",
        ),
        (
            {"input": [{"type": "function_call", "name": "f", "arguments": "{}"}]},
            "input.0.call_id",
            "Field required",
        ),
        ({"input": [{"type": "reasoning", "id": "rs_1", "summary": []}]}, "input", "no message"),
        ({"input": "hi", "tools": [{"type": "function"}]}, "tools.0.name", "Field required"),
        (
            {"input": "hi", "text": {"format": {"type": "json_schema", "name": "n"}}},
            "text.format.schema",
            "Field required",
        ),
        ({"input": "hi", "text": {"format": {"type": "grammar"}}}, "text.format", "does not match"),
        ({"input": "hi", "temperature": 2.5}, "temperature", "less than or equal to 2"),
        ({"input": "hi", "tool_choice": "required"}, "tool_choice", "requires tools"),
        ({"input": "hi", "metadata": {str(i): "v" for i in range(17)}}, "metadata", "at most 16"),
    ],
    ids=lambda value: value if isinstance(value, str) else None,
)
def test_refused_naming_the_field(fields: dict[str, Any], param: str, message: str) -> None:
    with pytest.raises(InvalidRequest) as raised:
        translate(**{"input": "hi", **fields})
    assert raised.value.param == param
    assert message in raised.value.message
    assert raised.value.status == 400


def test_too_many_items_are_refused_before_they_are_read() -> None:
    with pytest.raises(InvalidRequest) as raised:
        translate(input=[{"role": "user", "content": "x"}] * (DEFAULT_BOUNDS.max_messages + 1))
    limit = DEFAULT_BOUNDS.max_messages
    assert raised.value.param == "input" and f"limit of {limit}" in raised.value.message
