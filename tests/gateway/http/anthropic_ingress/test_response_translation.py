"""OpenAI chat completions into Anthropic messages: blocks, stop reasons, usage."""

from __future__ import annotations

from typing import Any

import orjson
import pytest

from gateway.http.anthropic_ingress.response_translation import (
    ReplyContext,
    anthropic_usage,
    stop_reason,
    to_message,
)
from providers.errors import UpstreamProtocolError
from providers.usage import Usage

CONTEXT = ReplyContext(model="default", stop_sequences=("END",), prompt_tokens=42)


def completion(message: dict[str, Any], finish: str | None = "stop", **extra: Any) -> bytes:
    choice = {"index": 0, "message": {"role": "assistant", **message}, "finish_reason": finish}
    body = {"id": "chatcmpl-1", "model": "served", "choices": [choice], **extra}
    return orjson.dumps(body)


USAGE = {
    "prompt_tokens": 100,
    "completion_tokens": 7,
    "prompt_tokens_details": {"cached_tokens": 60},
}


@pytest.mark.parametrize(
    ("message", "blocks"),
    [
        pytest.param({"content": "hi"}, [{"type": "text", "text": "hi"}], id="text"),
        pytest.param({"content": ""}, [], id="empty"),
        pytest.param(
            {"content": "42", "reasoning_content": "think"},
            [
                {"type": "thinking", "thinking": "think", "signature": ""},
                {"type": "text", "text": "42"},
            ],
            id="reasoning_content as thinking",
        ),
        pytest.param(
            {"content": None, "reasoning": "r"},
            [{"type": "thinking", "thinking": "r", "signature": ""}],
            id="reasoning as thinking",
        ),
        pytest.param(
            {
                "content": None,
                "tool_calls": [
                    {
                        "id": "c1",
                        "type": "function",
                        "function": {"name": "f", "arguments": '{"a": 1}'},
                    },
                    {
                        "id": "c2",
                        "type": "function",
                        "function": {"name": "g", "arguments": "not json"},
                    },
                ],
            },
            [
                {"type": "tool_use", "id": "c1", "name": "f", "input": {"a": 1}},
                {"type": "tool_use", "id": "c2", "name": "g", "input": {}},
            ],
            id="tool calls; malformed arguments read as {}",
        ),
    ],
)
def test_blocks(message: dict[str, Any], blocks: list[dict[str, Any]]) -> None:
    out = to_message(completion(message, usage=USAGE), CONTEXT)
    assert out["content"] == blocks
    assert out["type"] == "message" and out["role"] == "assistant"
    assert out["id"] == "msg_chatcmpl-1"
    assert out["model"] == "served"


@pytest.mark.parametrize(
    ("finish", "matched", "expected"),
    [
        ("stop", None, ("end_turn", None)),
        (None, None, ("end_turn", None)),
        ("length", None, ("max_tokens", None)),
        ("tool_calls", None, ("tool_use", None)),
        ("function_call", None, ("tool_use", None)),
        ("content_filter", None, ("refusal", None)),
        ("stop", "END", ("stop_sequence", "END")),
        ("stop", "OTHER", ("end_turn", None)),
        ("stop", 128001, ("end_turn", None)),
        ("something_new", None, ("end_turn", None)),
    ],
)
def test_stop_reason(
    finish: str | None, matched: str | int | None, expected: tuple[str, str | None]
) -> None:
    assert stop_reason(finish, matched, ["END"]) == expected


@pytest.mark.parametrize(
    ("usage", "expected"),
    [
        pytest.param(
            None,
            {"input_tokens": 42, "output_tokens": 3, "cache_read_input_tokens": 0},
            id="none reported: estimates",
        ),
        pytest.param(
            Usage(prompt_tokens=100, completion_tokens=7, cached_tokens=None),
            {"input_tokens": 100, "output_tokens": 7, "cache_read_input_tokens": 0},
            id="no cache details",
        ),
        pytest.param(
            Usage(prompt_tokens=100, completion_tokens=7, cached_tokens=60),
            {"input_tokens": 40, "output_tokens": 7, "cache_read_input_tokens": 60},
            id="cached tokens are not input tokens",
        ),
        pytest.param(
            Usage(prompt_tokens=100, completion_tokens=7, cached_tokens=60, cache_write_tokens=30),
            {
                "input_tokens": 10,
                "output_tokens": 7,
                "cache_read_input_tokens": 60,
                "cache_creation_input_tokens": 30,
            },
            id="cache writes, when known",
        ),
    ],
)
def test_usage(usage: Usage | None, expected: dict[str, int]) -> None:
    assert anthropic_usage(usage, prompt_tokens=42, output_tokens=3) == expected


def test_message_usage_and_stop_sequence() -> None:
    body = completion({"content": "a"}, "stop", usage=USAGE)
    body = body.replace(b'"finish_reason":"stop"', b'"finish_reason":"stop","stop_reason":"END"')
    out = to_message(body, CONTEXT)
    assert out["stop_reason"] == "stop_sequence" and out["stop_sequence"] == "END"
    assert out["usage"] == {"input_tokens": 40, "output_tokens": 7, "cache_read_input_tokens": 60}


@pytest.mark.parametrize("body", [b"not json", b'{"choices": "x"}', b'{"choices": []}'])
def test_unreadable_answer(body: bytes) -> None:
    with pytest.raises(UpstreamProtocolError):
        to_message(body, CONTEXT)
