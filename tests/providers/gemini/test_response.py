"""Gemini answers as OpenAI `chat.completion`s: parts, finish reasons and usage."""

from __future__ import annotations

from typing import Any

import orjson
import pytest

from providers.gemini.response import chat_completion, decode_response, finish_reason


def completion(response: dict[str, Any], model: str = "gemini-2.5-flash") -> dict[str, Any]:
    return chat_completion(decode_response(orjson.dumps(response)), model)


def answer(*parts: dict[str, Any], finish: str | None = "STOP", **extra: Any) -> dict[str, Any]:
    candidate: dict[str, Any] = {"content": {"role": "model", "parts": list(parts)}, "index": 0}
    if finish is not None:
        candidate["finishReason"] = finish
    return {"candidates": [candidate], **extra}


CALL_PART = {"functionCall": {"name": "weather", "args": {"city": "Oslo"}}}


@pytest.mark.parametrize(
    ("parts", "message"),
    [
        (
            [{"text": "Hello"}, {"text": ", world"}],
            {"role": "assistant", "content": "Hello, world"},
        ),
        (
            [{"text": "Let me think.", "thought": True}, {"text": "42"}],
            {"role": "assistant", "content": "42", "reasoning_content": "Let me think."},
        ),
        ([], {"role": "assistant", "content": ""}),
    ],
    ids=["text", "thoughts-are-reasoning", "no-parts"],
)
def test_text_and_thoughts(parts: list[dict[str, Any]], message: dict[str, Any]) -> None:
    result = completion(answer(*parts))
    assert result["choices"][0]["message"] == message
    assert result["object"] == "chat.completion"
    assert result["model"] == "gemini-2.5-flash"


def test_function_calls_become_tool_calls_with_ids_json_arguments_and_signatures() -> None:
    signed = {**CALL_PART, "thoughtSignature": "c2ln"}
    second = {"functionCall": {"name": "now", "id": "gemini-id-7"}}
    result = completion(answer({"text": "Checking."}, signed, second))
    choice = result["choices"][0]
    assert choice["finish_reason"] == "tool_calls"
    message = choice["message"]
    assert message["content"] == "Checking."
    first, other = message["tool_calls"]
    assert first["id"].startswith("call_") and len(first["id"]) > 10
    assert first["type"] == "function"
    assert first["function"] == {"name": "weather", "arguments": '{"city":"Oslo"}'}
    assert first["extra_content"] == {"google": {"thought_signature": "c2ln"}}
    assert other["id"] == "gemini-id-7"
    assert other["function"] == {"name": "now", "arguments": "{}"}
    assert "extra_content" not in other


def test_only_tool_calls_leave_content_null() -> None:
    message = completion(answer(CALL_PART))["choices"][0]["message"]
    assert message["content"] is None
    assert len(message["tool_calls"]) == 1


def test_distinct_calls_get_distinct_ids() -> None:
    calls = completion(answer(CALL_PART, CALL_PART))["choices"][0]["message"]["tool_calls"]
    assert calls[0]["id"] != calls[1]["id"]


@pytest.mark.parametrize(
    ("gemini", "called_tools", "openai"),
    [
        ("STOP", False, "stop"),
        ("STOP", True, "tool_calls"),
        ("MAX_TOKENS", False, "length"),
        ("MAX_TOKENS", True, "length"),
        ("SAFETY", False, "content_filter"),
        ("RECITATION", False, "content_filter"),
        ("PROHIBITED_CONTENT", False, "content_filter"),
        ("BLOCKLIST", False, "content_filter"),
        ("SPII", False, "content_filter"),
        ("OTHER", False, "stop"),
        ("MALFORMED_FUNCTION_CALL", False, "stop"),
        (None, False, None),
    ],
)
def test_finish_reasons(gemini: str | None, called_tools: bool, openai: str | None) -> None:
    assert finish_reason(gemini, called_tools) == openai


def test_a_blocked_prompt_is_a_content_filter_stop() -> None:
    result = completion({"promptFeedback": {"blockReason": "SAFETY"}})
    assert result["choices"][0]["finish_reason"] == "content_filter"
    assert result["choices"][0]["message"] == {"role": "assistant", "content": ""}


@pytest.mark.parametrize(
    ("metadata", "usage"),
    [
        (
            {"promptTokenCount": 100, "candidatesTokenCount": 20, "totalTokenCount": 120},
            {
                "prompt_tokens": 100,
                "completion_tokens": 20,
                "total_tokens": 120,
                "prompt_tokens_details": {"cached_tokens": 0},
                "completion_tokens_details": {"reasoning_tokens": 0},
            },
        ),
        (
            {
                "promptTokenCount": 1000,
                "cachedContentTokenCount": 768,
                "candidatesTokenCount": 20,
                "thoughtsTokenCount": 300,
                "totalTokenCount": 1320,
            },
            {
                "prompt_tokens": 1000,
                "completion_tokens": 320,
                "total_tokens": 1320,
                "prompt_tokens_details": {"cached_tokens": 768},
                "completion_tokens_details": {"reasoning_tokens": 300},
            },
        ),
    ],
    ids=["plain", "cached-and-thinking"],
)
def test_usage(metadata: dict[str, Any], usage: dict[str, Any]) -> None:
    assert completion(answer({"text": "x"}, usageMetadata=metadata))["usage"] == usage


def test_response_id_names_the_completion() -> None:
    assert completion(answer({"text": "x"}, responseId="abc123"))["id"] == "chatcmpl-abc123"
    assert completion(answer({"text": "x"}))["id"].startswith("chatcmpl-")


def test_unknown_fields_are_ignored() -> None:
    response = answer({"text": "x"}, modelVersion="gemini-2.5-flash-001", newField={"a": 1})
    response["candidates"][0]["safetyRatings"] = [{"category": "X", "probability": "LOW"}]
    assert completion(response)["choices"][0]["message"]["content"] == "x"


def test_a_malformed_answer_is_a_value_error() -> None:
    with pytest.raises(ValueError):
        decode_response(b'{"candidates": "nope"}')
