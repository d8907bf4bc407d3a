"""Anthropic message -> OpenAI chat.completion: content, reasoning, tool calls, stops, usage."""

from __future__ import annotations

from typing import Any

import orjson
import pytest

from providers.anthropic.messages_wire import MessageOut, MessagesUsage
from providers.anthropic.response_translation import (
    chat_completion_bytes,
    finish_reason,
    openai_usage,
    to_chat_completion,
)


def message(*content: dict[str, Any], stop_reason: str = "end_turn", **usage: int) -> MessageOut:
    return MessageOut.model_validate(
        {
            "id": "msg_9",
            "type": "message",
            "role": "assistant",
            "model": "claude-sonnet-upstream",
            "content": list(content),
            "stop_reason": stop_reason,
            "stop_sequence": None,
            "usage": {"input_tokens": 10, "output_tokens": 5, **usage},
        }
    )


def test_a_text_answer() -> None:
    completion = to_chat_completion(message({"type": "text", "text": "Hi there"}), created=1700)
    assert completion == {
        "id": "msg_9",
        "object": "chat.completion",
        "created": 1700,
        "model": "claude-sonnet-upstream",
        "choices": [
            {
                "index": 0,
                "message": {"role": "assistant", "content": "Hi there", "refusal": None},
                "finish_reason": "stop",
                "logprobs": None,
            }
        ],
        "usage": {"prompt_tokens": 10, "completion_tokens": 5, "total_tokens": 15},
    }


def test_thinking_text_and_tool_use() -> None:
    answer = message(
        {"type": "thinking", "thinking": "The user wants ", "signature": "sig"},
        {"type": "redacted_thinking", "data": "opaque"},
        {"type": "thinking", "thinking": "weather.", "signature": "sig2"},
        {"type": "text", "text": "Checking "},
        {"type": "text", "text": "now."},
        {"type": "tool_use", "id": "toolu_1", "name": "weather", "input": {"city": "Rome"}},
        {"type": "tool_use", "id": "toolu_2", "name": "time", "input": {}},
        stop_reason="tool_use",
    )
    choice = to_chat_completion(answer, created=0)["choices"][0]
    assert choice["finish_reason"] == "tool_calls"
    assert choice["message"] == {
        "role": "assistant",
        "content": "Checking now.",
        "refusal": None,
        "reasoning_content": "The user wants weather.",
        "tool_calls": [
            {
                "id": "toolu_1",
                "type": "function",
                "function": {"name": "weather", "arguments": '{"city":"Rome"}'},
            },
            {"id": "toolu_2", "type": "function", "function": {"name": "time", "arguments": "{}"}},
        ],
    }


def test_only_tool_calls_means_null_content() -> None:
    answer = message(
        {"type": "tool_use", "id": "t", "name": "f", "input": {}}, stop_reason="tool_use"
    )
    assert to_chat_completion(answer, created=0)["choices"][0]["message"]["content"] is None


def test_no_blocks_at_all_means_empty_text() -> None:
    assert to_chat_completion(message(), created=0)["choices"][0]["message"]["content"] == ""


@pytest.mark.parametrize(
    ("stop_reason", "expected"),
    [
        ("end_turn", "stop"),
        ("stop_sequence", "stop"),
        ("max_tokens", "length"),
        ("tool_use", "tool_calls"),
        ("refusal", "content_filter"),
        ("pause_turn", "stop"),
        ("model_context_window_exceeded", "length"),
        ("something_new", "stop"),
        (None, "stop"),
    ],
)
def test_stop_reasons(stop_reason: str | None, expected: str) -> None:
    assert finish_reason(stop_reason) == expected


@pytest.mark.parametrize(
    ("usage", "expected"),
    [
        (
            {"input_tokens": 10, "output_tokens": 5},
            {"prompt_tokens": 10, "completion_tokens": 5, "total_tokens": 15},
        ),
        (
            {
                "input_tokens": 3,
                "output_tokens": 7,
                "cache_read_input_tokens": 1000,
                "cache_creation_input_tokens": 200,
            },
            {
                "prompt_tokens": 1203,
                "completion_tokens": 7,
                "total_tokens": 1210,
                "prompt_tokens_details": {"cached_tokens": 1000, "cache_write_tokens": 200},
            },
        ),
        (
            {"input_tokens": 3, "output_tokens": 1, "cache_read_input_tokens": 0},
            {
                "prompt_tokens": 3,
                "completion_tokens": 1,
                "total_tokens": 4,
                "prompt_tokens_details": {"cached_tokens": 0},
            },
        ),
    ],
)
def test_usage(usage: dict[str, int], expected: dict[str, Any]) -> None:
    assert openai_usage(MessagesUsage.model_validate(usage)) == expected


def test_the_bytes_are_the_completion_as_json() -> None:
    answer = message({"type": "text", "text": "ok"})
    assert orjson.loads(chat_completion_bytes(answer, created=5)) == to_chat_completion(
        answer, created=5
    )
