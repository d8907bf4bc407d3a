"""Messages requests into OpenAI chat requests: conversation, options, and refusals."""

from __future__ import annotations

from typing import Any

import orjson
import pytest

from gateway.errors import InvalidRequest
from gateway.http.anthropic_ingress.messages_request import parse_messages_request
from gateway.http.anthropic_ingress.request_translation import to_chat_request

BASE: dict[str, Any] = {"model": "default", "max_tokens": 64}
IMAGE_DATA = {"type": "base64", "media_type": "image/png", "data": "iVBORw0KGgo="}


def translate(**fields: Any) -> dict[str, Any]:
    request = parse_messages_request(orjson.dumps({**BASE, **fields}))
    return dict(to_chat_request(request))


def user(content: Any) -> dict[str, Any]:
    return {"role": "user", "content": content}


def assistant(content: Any) -> dict[str, Any]:
    return {"role": "assistant", "content": content}


@pytest.mark.parametrize(
    ("fields", "messages"),
    [
        pytest.param(
            {"messages": [user("hi")]},
            [user("hi")],
            id="plain string",
        ),
        pytest.param(
            {"system": "be brief", "messages": [user("hi")]},
            [{"role": "system", "content": "be brief"}, user("hi")],
            id="system string",
        ),
        pytest.param(
            {
                "system": [
                    {"type": "text", "text": "one"},
                    {"type": "text", "text": "two", "cache_control": {"type": "ephemeral"}},
                ],
                "messages": [user("hi")],
            },
            [{"role": "system", "content": "one\n\ntwo"}, user("hi")],
            id="system blocks joined, cache_control ignored",
        ),
        pytest.param(
            {"messages": [user([{"type": "text", "text": "only"}])]},
            [user("only")],
            id="one text block as a string",
        ),
        pytest.param(
            {
                "messages": [
                    user(
                        [
                            {"type": "text", "text": "what is"},
                            {"type": "image", "source": IMAGE_DATA},
                            {"type": "image", "source": {"type": "url", "url": "https://x/y.png"}},
                        ]
                    )
                ]
            },
            [
                user(
                    [
                        {"type": "text", "text": "what is"},
                        {
                            "type": "image_url",
                            "image_url": {"url": "data:image/png;base64,iVBORw0KGgo="},
                        },
                        {"type": "image_url", "image_url": {"url": "https://x/y.png"}},
                    ]
                )
            ],
            id="text and images (base64, url)",
        ),
        pytest.param(
            {
                "messages": [
                    user("weather?"),
                    assistant(
                        [
                            {"type": "thinking", "thinking": "hmm", "signature": "sig"},
                            {"type": "text", "text": "Let me look."},
                            {
                                "type": "tool_use",
                                "id": "t1",
                                "name": "get",
                                "input": {"city": "Oslo"},
                            },
                        ]
                    ),
                    user(
                        [
                            {"type": "tool_result", "tool_use_id": "t1", "content": "rain"},
                            {"type": "text", "text": "and tomorrow?"},
                        ]
                    ),
                ]
            },
            [
                user("weather?"),
                {
                    "role": "assistant",
                    "content": "Let me look.",
                    "tool_calls": [
                        {
                            "id": "t1",
                            "type": "function",
                            "function": {"name": "get", "arguments": '{"city":"Oslo"}'},
                        }
                    ],
                },
                {"role": "tool", "tool_call_id": "t1", "content": "rain"},
                user("and tomorrow?"),
            ],
            id="tool use round trip, thinking dropped",
        ),
        pytest.param(
            {
                "messages": [
                    assistant([{"type": "tool_use", "id": "a", "name": "f", "input": {}}]),
                    user(
                        [
                            {
                                "type": "tool_result",
                                "tool_use_id": "a",
                                "is_error": True,
                                "content": [
                                    {"type": "text", "text": "no such file"},
                                    {"type": "image", "source": IMAGE_DATA},
                                ],
                            }
                        ]
                    ),
                ]
            },
            [
                {
                    "role": "assistant",
                    "content": None,
                    "tool_calls": [
                        {
                            "id": "a",
                            "type": "function",
                            "function": {"name": "f", "arguments": "{}"},
                        }
                    ],
                },
                {"role": "tool", "tool_call_id": "a", "content": "Error: no such file"},
                user(
                    [
                        {
                            "type": "image_url",
                            "image_url": {"url": "data:image/png;base64,iVBORw0KGgo="},
                        }
                    ]
                ),
            ],
            id="tool_result blocks, is_error, image moved to the user turn",
        ),
        pytest.param(
            {"messages": [user([]), assistant([{"type": "redacted_thinking", "data": "x"}])]},
            [user(""), assistant("")],
            id="empty turns kept, not dropped",
        ),
    ],
)
def test_conversation(fields: dict[str, Any], messages: list[dict[str, Any]]) -> None:
    assert translate(**fields)["messages"] == messages


HI = [user("hi")]
TOOLS = [{"name": "get", "description": "fetch", "input_schema": {"type": "object"}}]
FUNCTIONS = [
    {
        "type": "function",
        "function": {"name": "get", "parameters": {"type": "object"}, "description": "fetch"},
    }
]


@pytest.mark.parametrize(
    ("fields", "expected"),
    [
        pytest.param({}, {"max_tokens": 64, "stream": False}, id="defaults"),
        pytest.param(
            {"stream": True},
            {"stream": True, "stream_options": {"include_usage": True}},
            id="stream asks for usage",
        ),
        pytest.param(
            {"temperature": 0.2, "top_p": 0.9, "top_k": 5},
            {"temperature": 0.2, "top_p": 0.9},
            id="sampling; top_k dropped",
        ),
        pytest.param(
            {"metadata": {"user_id": "u-42", "team": "x"}},
            {"user": "u-42"},
            id="metadata.user_id as user (the session key), the rest dropped",
        ),
        pytest.param({"metadata": {"user_id": None}}, {}, id="metadata.user_id null"),
        pytest.param({"metadata": {}}, {}, id="metadata empty"),
        pytest.param({"stop_sequences": ["END"]}, {"stop": ["END"]}, id="stop sequences"),
        pytest.param({"tools": TOOLS}, {"tools": FUNCTIONS}, id="tools"),
        pytest.param(
            {"tools": TOOLS, "tool_choice": {"type": "any"}},
            {"tools": FUNCTIONS, "tool_choice": "required"},
            id="tool_choice any",
        ),
        pytest.param(
            {"tools": TOOLS, "tool_choice": {"type": "auto", "disable_parallel_tool_use": True}},
            {"tools": FUNCTIONS, "tool_choice": "auto", "parallel_tool_calls": False},
            id="tool_choice auto, no parallel calls",
        ),
        pytest.param(
            {"tools": TOOLS, "tool_choice": {"type": "tool", "name": "get"}},
            {"tools": FUNCTIONS, "tool_choice": {"type": "function", "function": {"name": "get"}}},
            id="tool_choice tool",
        ),
        pytest.param(
            {"tools": TOOLS, "tool_choice": {"type": "none"}},
            {"tools": FUNCTIONS, "tool_choice": "none"},
            id="tool_choice none",
        ),
        pytest.param({"tool_choice": {"type": "auto"}}, {}, id="tool_choice auto without tools"),
        pytest.param(
            {"thinking": {"type": "enabled", "budget_tokens": 1024}},
            {"reasoning_effort": "low"},
            id="small thinking budget",
        ),
        pytest.param(
            {"thinking": {"type": "enabled", "budget_tokens": 8000}},
            {"reasoning_effort": "medium"},
            id="medium thinking budget",
        ),
        pytest.param(
            {"thinking": {"type": "enabled", "budget_tokens": 31999}},
            {"reasoning_effort": "high"},
            id="large thinking budget",
        ),
        pytest.param({"thinking": {"type": "disabled"}}, {}, id="thinking disabled"),
    ],
)
def test_options(fields: dict[str, Any], expected: dict[str, Any]) -> None:
    body = translate(messages=HI, **fields)
    options = {k: v for k, v in body.items() if k not in ("model", "messages")}
    assert options == {"max_tokens": 64, "stream": False, **expected}
    assert body["model"] == "default"


@pytest.mark.parametrize(
    ("fields", "param"),
    [
        pytest.param({"max_tokens": None}, "max_tokens", id="max_tokens missing"),
        pytest.param({"max_tokens": 0}, "max_tokens", id="max_tokens zero"),
        pytest.param({"messages": []}, "messages", id="no messages"),
        pytest.param({"messages": [{"role": "system", "content": "x"}]}, "messages.0", id="role"),
        pytest.param(
            {"messages": [user([{"type": "document", "source": {}}])]},
            "messages.0.content.0",
            id="unsupported block",
        ),
        pytest.param({"messages": [user(5)]}, "messages.0.content", id="content a number"),
        pytest.param(
            {"messages": [user([{"type": "text", "text": "x"}, "loose"])]},
            "messages.0.content.1",
            id="block not an object",
        ),
        pytest.param(
            {"messages": [user([{"type": "text"}])]},
            "messages.0.content.0.text",
            id="text block without text",
        ),
        pytest.param(
            {"messages": HI, "tools": [{"type": "web_search_20250305", "name": "web_search"}]},
            "tools.0.type",
            id="server tool",
        ),
        pytest.param(
            {"messages": HI, "tools": [{"name": "f"}]}, "tools.0.input_schema", id="no schema"
        ),
        pytest.param(
            {"messages": HI, "tool_choice": {"type": "any"}}, "tool_choice", id="any without tools"
        ),
        pytest.param(
            {"messages": HI, "tool_choice": {"type": "tool"}}, "tool_choice", id="tool unnamed"
        ),
        pytest.param(
            {"messages": HI, "thinking": {"type": "enabled"}}, "thinking", id="budget missing"
        ),
    ],
)
def test_refused(fields: dict[str, Any], param: str) -> None:
    body = {k: v for k, v in {**BASE, "messages": HI, **fields}.items() if v is not None}
    with pytest.raises(InvalidRequest) as caught:
        to_chat_request(parse_messages_request(orjson.dumps(body)))
    assert caught.value.status == 400
    assert caught.value.param == param


@pytest.mark.parametrize("raw", [b"{not json", b"[1, 2]", b'"text"'])
def test_body_that_is_no_object(raw: bytes) -> None:
    with pytest.raises(InvalidRequest):
        parse_messages_request(raw)


def test_error_in_json_only_pydantic_reads() -> None:
    raw = b'{"model": "m", "max_tokens": 5, "temperature": NaN, "messages": [{"role": "x"}]}'
    with pytest.raises(InvalidRequest) as caught:
        parse_messages_request(raw)
    assert caught.value.param is not None
