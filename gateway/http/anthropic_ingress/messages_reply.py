"""Anthropic's Messages answer as the gateway sends it: the message, its blocks, its usage,
and the SSE events of a stream (TypedDicts: built here, serialised by orjson as they are).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, Literal, NotRequired, TypedDict

import orjson

StopReason = Literal["end_turn", "max_tokens", "stop_sequence", "tool_use", "refusal"]


class TextBlock(TypedDict):
    type: Literal["text"]
    text: str


class ThinkingBlock(TypedDict):
    type: Literal["thinking"]
    thinking: str
    signature: str
    """Always empty: no backend behind the gateway signs its reasoning as Anthropic's does."""


class ToolUseBlock(TypedDict):
    type: Literal["tool_use"]
    id: str
    name: str
    input: dict[str, Any]


ContentBlock = TextBlock | ThinkingBlock | ToolUseBlock


class Usage(TypedDict):
    input_tokens: int
    """Prompt tokens read neither from nor into a cache."""
    output_tokens: int
    cache_read_input_tokens: int
    cache_creation_input_tokens: NotRequired[int]
    """Only when the backend reports cache writes (Anthropic backends do)."""


class Message(TypedDict):
    id: str
    type: Literal["message"]
    role: Literal["assistant"]
    model: str
    content: list[ContentBlock]
    stop_reason: StopReason | None
    stop_sequence: str | None
    usage: Usage


class ErrorDetail(TypedDict):
    type: str
    message: str


class ErrorBody(TypedDict):
    type: Literal["error"]
    error: ErrorDetail


def event(kind: str, data: Mapping[str, object]) -> bytes:
    """One SSE event; Anthropic names the event and repeats its type in the data."""
    return b"event: " + kind.encode() + b"\ndata: " + orjson.dumps(data) + b"\n\n"
