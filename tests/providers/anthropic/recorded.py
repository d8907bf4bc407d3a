"""Event sequences in the shape the Messages API streams them, for the stream tests."""

from __future__ import annotations

from typing import Any

Event = dict[str, Any]


def message_start(input_tokens: int = 25, **usage: int) -> Event:
    return {
        "type": "message_start",
        "message": {
            "id": "msg_01",
            "type": "message",
            "role": "assistant",
            "content": [],
            "model": "claude-test-1",
            "stop_reason": None,
            "stop_sequence": None,
            "usage": {"input_tokens": input_tokens, "output_tokens": 1, **usage},
        },
    }


def text_delta(index: int, text: str) -> Event:
    return {
        "type": "content_block_delta",
        "index": index,
        "delta": {"type": "text_delta", "text": text},
    }


def block_stop(index: int) -> Event:
    return {"type": "content_block_stop", "index": index}


def message_delta(stop_reason: str, output_tokens: int) -> Event:
    return {
        "type": "message_delta",
        "delta": {"stop_reason": stop_reason, "stop_sequence": None},
        "usage": {"output_tokens": output_tokens},
    }


PING: Event = {"type": "ping"}
MESSAGE_STOP: Event = {"type": "message_stop"}

TEXT_STREAM: list[Event] = [
    message_start(cache_read_input_tokens=100, cache_creation_input_tokens=10),
    {"type": "content_block_start", "index": 0, "content_block": {"type": "text", "text": ""}},
    PING,
    text_delta(0, "Hello"),
    text_delta(0, ", world"),
    block_stop(0),
    message_delta("end_turn", 15),
    MESSAGE_STOP,
]
"""A plain answer, with a ping among the deltas and prompt-cache counts."""

TOOL_STREAM: list[Event] = [
    message_start(input_tokens=40),
    {
        "type": "content_block_start",
        "index": 0,
        "content_block": {"type": "thinking", "thinking": "", "signature": ""},
    },
    {
        "type": "content_block_delta",
        "index": 0,
        "delta": {"type": "thinking_delta", "thinking": "Need weather."},
    },
    {
        "type": "content_block_delta",
        "index": 0,
        "delta": {"type": "signature_delta", "signature": "EqQBCgIYAhIM"},
    },
    block_stop(0),
    {"type": "content_block_start", "index": 1, "content_block": {"type": "text", "text": ""}},
    text_delta(1, "Checking."),
    block_stop(1),
    {
        "type": "content_block_start",
        "index": 2,
        "content_block": {"type": "tool_use", "id": "toolu_01", "name": "weather", "input": {}},
    },
    {
        "type": "content_block_delta",
        "index": 2,
        "delta": {"type": "input_json_delta", "partial_json": ""},
    },
    {
        "type": "content_block_delta",
        "index": 2,
        "delta": {"type": "input_json_delta", "partial_json": '{"city": "Pa'},
    },
    {
        "type": "content_block_delta",
        "index": 2,
        "delta": {"type": "input_json_delta", "partial_json": 'ris"}'},
    },
    block_stop(2),
    {
        "type": "content_block_start",
        "index": 3,
        "content_block": {"type": "tool_use", "id": "toolu_02", "name": "time", "input": {}},
    },
    {
        "type": "content_block_delta",
        "index": 3,
        "delta": {"type": "input_json_delta", "partial_json": "{}"},
    },
    block_stop(3),
    message_delta("tool_use", 60),
    MESSAGE_STOP,
]
"""Thinking (with its signature), text, then two tool calls with streamed input."""

OVERLOADED: Event = {
    "type": "error",
    "error": {"type": "overloaded_error", "message": "Overloaded"},
}
