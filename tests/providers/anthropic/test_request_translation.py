"""OpenAI chat request -> Anthropic Messages request: each option and message kind, and refusals."""

from __future__ import annotations

from typing import Any

import orjson
import pytest

from providers.anthropic.chat_request import UntranslatableRequest
from providers.anthropic.request_translation import DEFAULT_MAX_TOKENS, to_messages_request

USER_HI = {"role": "user", "content": "hi"}


def translate(stream: bool = False, **fields: Any) -> dict[str, Any]:
    body = {"model": "claude-x", "messages": [USER_HI], **fields}
    return dict(to_messages_request(orjson.dumps(body), stream=stream).body)


def text(value: str) -> dict[str, str]:
    return {"type": "text", "text": value}


def test_the_minimal_request_gets_the_required_fields() -> None:
    assert translate() == {
        "model": "claude-x",
        "messages": [{"role": "user", "content": [text("hi")]}],
        "max_tokens": DEFAULT_MAX_TOKENS,
        "stream": False,
    }


@pytest.mark.parametrize(
    ("messages", "system", "turns"),
    [
        pytest.param(
            [
                {"role": "system", "content": "Be brief."},
                {"role": "developer", "content": [{"type": "text", "text": "Use French."}]},
                USER_HI,
            ],
            [text("Be brief."), text("Use French.")],
            [{"role": "user", "content": [text("hi")]}],
            id="system-and-developer-hoisted-in-order",
        ),
        pytest.param(
            [
                {
                    "role": "user",
                    "content": [
                        {"type": "text", "text": "What is this?"},
                        {"type": "image_url", "image_url": {"url": "data:image/png;base64,iVBO"}},
                        {
                            "type": "image_url",
                            "image_url": {"url": "https://x.test/a.jpg", "detail": "high"},
                        },
                    ],
                }
            ],
            None,
            [
                {
                    "role": "user",
                    "content": [
                        text("What is this?"),
                        {
                            "type": "image",
                            "source": {"type": "base64", "media_type": "image/png", "data": "iVBO"},
                        },
                        {"type": "image", "source": {"type": "url", "url": "https://x.test/a.jpg"}},
                    ],
                }
            ],
            id="multipart-with-data-and-http-images",
        ),
        pytest.param(
            [
                USER_HI,
                {
                    "role": "assistant",
                    "content": "Let me look.",
                    "tool_calls": [
                        {
                            "id": "call_1",
                            "type": "function",
                            "function": {"name": "weather", "arguments": '{"city":"Oslo"}'},
                        },
                        {"id": "call_2", "function": {"name": "time", "arguments": ""}},
                    ],
                },
                {"role": "tool", "tool_call_id": "call_1", "content": "3 C"},
                {"role": "tool", "tool_call_id": "call_2", "content": [text("noon")]},
                {"role": "user", "content": "And tomorrow?"},
            ],
            None,
            [
                {"role": "user", "content": [text("hi")]},
                {
                    "role": "assistant",
                    "content": [
                        text("Let me look."),
                        {
                            "type": "tool_use",
                            "id": "call_1",
                            "name": "weather",
                            "input": {"city": "Oslo"},
                        },
                        {"type": "tool_use", "id": "call_2", "name": "time", "input": {}},
                    ],
                },
                {
                    "role": "user",
                    "content": [
                        {"type": "tool_result", "tool_use_id": "call_1", "content": "3 C"},
                        {"type": "tool_result", "tool_use_id": "call_2", "content": [text("noon")]},
                        text("And tomorrow?"),
                    ],
                },
            ],
            id="tool-calls-and-merged-tool-results",
        ),
        pytest.param(
            [
                USER_HI,
                {"role": "user", "content": ""},
                {"role": "assistant", "content": None},
                {"role": "user", "content": "again"},
            ],
            None,
            [{"role": "user", "content": [text("hi"), text("again")]}],
            id="empty-turns-dropped-same-role-merged",
        ),
    ],
)
def test_messages(
    messages: list[dict[str, Any]], system: list[dict[str, str]] | None, turns: list[Any]
) -> None:
    body = translate(messages=messages)
    assert body.get("system") == system
    assert body["messages"] == turns


@pytest.mark.parametrize(
    ("fields", "expected"),
    [
        ({"max_tokens": 100}, {"max_tokens": 100}),
        ({"max_tokens": 100, "max_completion_tokens": 50}, {"max_tokens": 50}),
        (
            {"temperature": 0.2, "top_p": 0.9, "top_k": 5},
            {"temperature": 0.2, "top_p": 0.9, "top_k": 5},
        ),
        ({"stop": "END"}, {"stop_sequences": ["END"]}),
        ({"stop": ["a", "b"]}, {"stop_sequences": ["a", "b"]}),
        ({"user": "u-42"}, {"metadata": {"user_id": "u-42"}}),
        ({"seed": 7, "n": 1, "logprobs": False, "response_format": {"type": "text"}}, {}),
    ],
)
def test_limits_and_sampling(fields: dict[str, Any], expected: dict[str, Any]) -> None:
    body = translate(**fields)
    for key, value in expected.items():
        assert body[key] == value
    if not expected:
        assert set(body) == {"model", "messages", "max_tokens", "stream"}


WEATHER = {
    "type": "function",
    "function": {
        "name": "weather",
        "description": "Weather by city",
        "parameters": {"type": "object", "properties": {"city": {"type": "string"}}},
    },
}


def test_tools_become_input_schemas() -> None:
    bare = {"type": "function", "function": {"name": "now"}}
    assert translate(tools=[WEATHER, bare])["tools"] == [
        {
            "name": "weather",
            "description": "Weather by city",
            "input_schema": {"type": "object", "properties": {"city": {"type": "string"}}},
        },
        {"name": "now", "input_schema": {"type": "object", "properties": {}}},
    ]


@pytest.mark.parametrize(
    ("fields", "choice"),
    [
        ({}, None),
        ({"tool_choice": "none"}, {"type": "none"}),
        ({"tool_choice": "auto"}, {"type": "auto"}),
        ({"tool_choice": "required"}, {"type": "any"}),
        (
            {"tool_choice": {"type": "function", "function": {"name": "weather"}}},
            {"type": "tool", "name": "weather"},
        ),
        ({"parallel_tool_calls": False}, {"type": "auto", "disable_parallel_tool_use": True}),
        (
            {"tool_choice": "required", "parallel_tool_calls": False},
            {"type": "any", "disable_parallel_tool_use": True},
        ),
        ({"tool_choice": "none", "parallel_tool_calls": False}, {"type": "none"}),
        ({"parallel_tool_calls": True}, None),
    ],
)
def test_tool_choice(fields: dict[str, Any], choice: dict[str, Any] | None) -> None:
    assert translate(tools=[WEATHER], **fields).get("tool_choice") == choice


@pytest.mark.parametrize(
    ("fields", "thinking", "max_tokens"),
    [
        ({"reasoning_effort": "low"}, {"type": "enabled", "budget_tokens": 1024}, 4096 + 1024),
        ({"reasoning_effort": "high"}, {"type": "enabled", "budget_tokens": 16384}, 4096 + 16384),
        (
            {"reasoning_effort": "high", "max_completion_tokens": 8000},
            {"type": "enabled", "budget_tokens": 7999},
            8000,
        ),
        ({"reasoning_effort": "minimal"}, None, 4096),
        ({"reasoning_effort": "none"}, None, 4096),
        (
            {"thinking": {"type": "enabled", "budget_tokens": 2000}, "max_tokens": 3000},
            {"type": "enabled", "budget_tokens": 2000},
            3000,
        ),
        (
            {"thinking": {"type": "enabled", "budget_tokens": 2000}, "reasoning_effort": "high"},
            {"type": "enabled", "budget_tokens": 2000},
            4096 + 2000,
        ),
        (
            {"thinking": {"type": "disabled"}, "reasoning_effort": "high"},
            {"type": "disabled"},
            4096,
        ),
    ],
)
def test_thinking(fields: dict[str, Any], thinking: dict[str, Any] | None, max_tokens: int) -> None:
    body = translate(**fields)
    assert body.get("thinking") == thinking
    assert body["max_tokens"] == max_tokens


def test_stream_flag_and_include_usage_follow_the_call() -> None:
    raw = orjson.dumps(
        {
            "model": "m",
            "messages": [USER_HI],
            "stream": True,
            "stream_options": {"include_usage": True},
        }
    )
    streamed = to_messages_request(raw, stream=True)
    assert streamed.body["stream"] is True
    assert streamed.include_usage is True
    whole = to_messages_request(raw, stream=False)
    assert whole.body["stream"] is False
    assert whole.include_usage is False


@pytest.mark.parametrize(
    ("fields", "param", "says"),
    [
        ({"n": 2}, "n", "unsupported parameter"),
        ({"logprobs": True}, "logprobs", "logprobs"),
        ({"presence_penalty": 0.5}, "presence_penalty", "presence_penalty"),
        ({"response_format": {"type": "json_object"}}, "response_format", "response_format"),
        ({"logit_bias": {"50256": -100}}, "logit_bias", "logit_bias"),
        ({"frobnicate": True}, "frobnicate", "frobnicate"),
        ({"tool_choice": "required"}, "tool_choice", "requires tools"),
        ({"reasoning_effort": "medium", "max_tokens": 1000}, "max_completion_tokens", "above 1024"),
        ({"thinking": {"type": "enabled"}}, "thinking.budget_tokens", "budget_tokens"),
        ({"reasoning_effort": "extreme"}, "reasoning_effort", "reasoning_effort"),
        (
            {
                "messages": [
                    {"role": "user", "content": [{"type": "input_audio", "input_audio": {}}]}
                ]
            },
            "messages.0.user.content.0",
            "input_audio",
        ),
        (
            {
                "messages": [
                    {"role": "user", "content": [{"type": "image_url", "image_url": {"url": "f"}}]}
                ]
            },
            "image_url",
            "data:<media type>;base64",
        ),
        (
            {
                "messages": [
                    {
                        "role": "assistant",
                        "tool_calls": [{"id": "c", "function": {"name": "f", "arguments": "[1]"}}],
                    }
                ]
            },
            "tool_calls",
            "JSON object",
        ),
        ({"messages": []}, "messages", "at least 1"),
    ],
)
def test_untranslatable_requests_are_refused_by_name(
    fields: dict[str, Any], param: str, says: str
) -> None:
    with pytest.raises(UntranslatableRequest) as caught:
        translate(**fields)
    assert caught.value.param == param
    assert says in caught.value.message


def test_a_body_that_is_not_json_is_refused() -> None:
    with pytest.raises(UntranslatableRequest, match="Invalid JSON"):
        to_messages_request(b"{not json", stream=False)
