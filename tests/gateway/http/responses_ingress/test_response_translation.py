"""OpenAI chat completions into `response` objects: items, status, usage and the echo."""

from __future__ import annotations

from typing import Any

import orjson
import pytest

from gateway.http.responses_ingress.response_translation import (
    ReplyContext,
    reply_context,
    to_response,
)
from gateway.http.responses_ingress.responses_request import parse_responses_request
from providers.errors import UpstreamProtocolError

CONTEXT = reply_context(parse_responses_request(b'{"model": "default", "input": "hi"}'), 42)
USAGE = {
    "prompt_tokens": 50,
    "completion_tokens": 9,
    "prompt_tokens_details": {"cached_tokens": 32},
    "completion_tokens_details": {"reasoning_tokens": 6},
}
CALL = {"id": "call_1", "type": "function", "function": {"name": "f", "arguments": '{"a":1}'}}


def completion(message: dict[str, Any], finish: str = "stop", **extra: Any) -> bytes:
    choice = {"index": 0, "message": {"role": "assistant", **message}, "finish_reason": finish}
    body = {"id": "chatcmpl-1", "object": "chat.completion", "choices": [choice], **extra}
    return orjson.dumps(body)


def shapes(output: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """The items without their ids, which are the gateway's own."""
    for item in output:
        prefix = {"message": "msg_", "reasoning": "rs_", "function_call": "fc_"}[item["type"]]
        assert item.pop("id").startswith(prefix)
    return output


def message(text: str, status: str = "completed") -> dict[str, Any]:
    content = [{"type": "output_text", "text": text, "annotations": []}]
    return {"type": "message", "status": status, "role": "assistant", "content": content}


@pytest.mark.parametrize(
    ("body", "status", "output"),
    [
        pytest.param(completion({"content": "hello"}), "completed", [message("hello")], id="text"),
        pytest.param(completion({"content": None}), "completed", [message("")], id="empty"),
        pytest.param(
            completion({"content": "cut"}, "length"),
            "incomplete",
            [message("cut", "incomplete")],
            id="length",
        ),
        pytest.param(
            completion({"content": "4", "reasoning_content": "2+2"}),
            "completed",
            [
                {"type": "reasoning", "summary": [{"type": "summary_text", "text": "2+2"}]},
                message("4"),
            ],
            id="reasoning first",
        ),
        pytest.param(
            completion({"content": None, "reasoning": "hmm", "tool_calls": [CALL]}, "tool_calls"),
            "completed",
            [
                {"type": "reasoning", "summary": [{"type": "summary_text", "text": "hmm"}]},
                {
                    "type": "function_call",
                    "status": "completed",
                    "call_id": "call_1",
                    "name": "f",
                    "arguments": '{"a":1}',
                },
            ],
            id="function call",
        ),
        pytest.param(
            completion({"content": "looking", "tool_calls": [CALL, {**CALL, "id": "call_2"}]}),
            "completed",
            [
                message("looking"),
                {
                    "type": "function_call",
                    "status": "completed",
                    "call_id": "call_1",
                    "name": "f",
                    "arguments": '{"a":1}',
                },
                {
                    "type": "function_call",
                    "status": "completed",
                    "call_id": "call_2",
                    "name": "f",
                    "arguments": '{"a":1}',
                },
            ],
            id="text and two calls",
        ),
    ],
)
def test_output_items_and_status(body: bytes, status: str, output: list[dict[str, Any]]) -> None:
    response: dict[str, Any] = dict(to_response(body, CONTEXT))
    assert response["status"] == status
    assert shapes(response.pop("output")) == output
    reason = {"reason": "max_output_tokens"} if status == "incomplete" else None
    assert response["incomplete_details"] == reason


@pytest.mark.parametrize(
    ("usage", "expected"),
    [
        pytest.param(
            USAGE,
            {
                "input_tokens": 50,
                "input_tokens_details": {"cached_tokens": 32},
                "output_tokens": 9,
                "output_tokens_details": {"reasoning_tokens": 6},
                "total_tokens": 59,
            },
            id="cached and reasoning",
        ),
        pytest.param(
            {
                "prompt_tokens": 50,
                "completion_tokens": 1,
                "prompt_tokens_details": {"cached_tokens": 10, "cache_write_tokens": 40},
            },
            {
                "input_tokens": 50,
                "input_tokens_details": {"cached_tokens": 10, "cache_write_tokens": 40},
                "output_tokens": 1,
                "output_tokens_details": {"reasoning_tokens": 0},
                "total_tokens": 51,
            },
            id="cache writes",
        ),
        pytest.param(
            None,
            {
                "input_tokens": 42,
                "input_tokens_details": {"cached_tokens": 0},
                "output_tokens": 0,
                "output_tokens_details": {"reasoning_tokens": 0},
                "total_tokens": 42,
            },
            id="estimated when not reported",
        ),
    ],
)
def test_usage(usage: dict[str, Any] | None, expected: dict[str, Any]) -> None:
    assert to_response(completion({"content": "x"}, usage=usage), CONTEXT)["usage"] == expected


def test_the_frame_and_the_echo() -> None:
    request = parse_responses_request(
        orjson.dumps(
            {
                "model": "default",
                "input": "hi",
                "instructions": "be brief",
                "max_output_tokens": 10,
                "metadata": {"k": "v"},
                "parallel_tool_calls": False,
                "reasoning": {"effort": "high"},
                "temperature": 0.5,
                "text": {"format": {"type": "json_schema", "name": "n", "schema": {}}},
                "tools": [{"type": "function", "name": "f"}],
                "tool_choice": {"type": "function", "name": "f"},
                "top_p": 0.9,
                "user": "u",
            }
        )
    )
    context = reply_context(request, 1)
    response = dict(to_response(completion({"content": "x"}, model="served-id"), context))
    response.pop("output"), response.pop("usage")
    assert response == {
        "id": context.response_id,
        "object": "response",
        "created_at": context.created_at,
        "model": "default",
        "instructions": "be brief",
        "max_output_tokens": 10,
        "metadata": {"k": "v"},
        "parallel_tool_calls": False,
        "reasoning": {"effort": "high", "summary": None},
        "temperature": 0.5,
        "text": {"format": {"type": "json_schema", "name": "n", "schema": {}}},
        "tool_choice": {"type": "function", "name": "f"},
        "tools": [
            {
                "type": "function",
                "name": "f",
                "description": None,
                "parameters": None,
                "strict": None,
            }
        ],
        "top_p": 0.9,
        "user": "u",
        "status": "completed",
        "error": None,
        "incomplete_details": None,
        "previous_response_id": None,
        "store": False,
        "background": False,
        "truncation": "disabled",
    }
    assert context.response_id.startswith("resp_") and len(context.response_id) == 29


@pytest.mark.parametrize(
    "body",
    [b"not json", b'{"choices": "many"}', b'{"id": "x", "choices": []}'],
    ids=["not json", "not a completion", "no choices"],
)
def test_unreadable_answers_are_the_backends_fault(body: bytes) -> None:
    with pytest.raises(UpstreamProtocolError):
        to_response(body, CONTEXT)


def test_each_request_has_its_own_id() -> None:
    other: ReplyContext = reply_context(parse_responses_request(b'{"model": "m", "input": "x"}'), 1)
    assert other.response_id != CONTEXT.response_id
