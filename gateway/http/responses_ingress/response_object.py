"""The Responses API's answer as the gateway sends it: the `response` object, its output
items and usage, and the SSE events of a stream (TypedDicts: built here, serialised by
orjson as they are).
"""

from __future__ import annotations

import secrets
from collections.abc import Mapping
from typing import Any, Literal, NotRequired, TypedDict

import orjson

Status = Literal["in_progress", "completed", "incomplete", "failed"]
ItemStatus = Literal["in_progress", "completed", "incomplete"]


class OutputText(TypedDict):
    type: Literal["output_text"]
    text: str
    annotations: list[Any]
    """Always empty: no backend behind the gateway cites sources."""


class MessageItem(TypedDict):
    id: str
    type: Literal["message"]
    status: ItemStatus
    role: Literal["assistant"]
    content: list[OutputText]


class SummaryText(TypedDict):
    type: Literal["summary_text"]
    text: str


class ReasoningItem(TypedDict):
    id: str
    type: Literal["reasoning"]
    summary: list[SummaryText]
    """The backend's reasoning text (`reasoning_content`), as one summary part."""


class FunctionCallItem(TypedDict):
    id: str
    type: Literal["function_call"]
    status: ItemStatus
    call_id: str
    name: str
    arguments: str


OutputItem = MessageItem | ReasoningItem | FunctionCallItem


class InputTokensDetails(TypedDict):
    cached_tokens: int
    cache_write_tokens: NotRequired[int]
    """Only when the backend reports cache writes (Anthropic backends do)."""


class OutputTokensDetails(TypedDict):
    reasoning_tokens: int


class ResponseUsage(TypedDict):
    input_tokens: int
    input_tokens_details: InputTokensDetails
    output_tokens: int
    output_tokens_details: OutputTokensDetails
    total_tokens: int


class IncompleteDetails(TypedDict):
    reason: Literal["max_output_tokens", "content_filter"]


class ResponseError(TypedDict):
    code: Literal["server_error"]
    message: str


class RequestEcho(TypedDict):
    """What a `response` repeats of its request."""

    model: str
    """The route the client named."""
    instructions: str | None
    max_output_tokens: int | None
    metadata: dict[str, str]
    parallel_tool_calls: bool
    reasoning: dict[str, Any]
    temperature: float | None
    text: dict[str, Any]
    tool_choice: str | dict[str, Any]
    tools: list[dict[str, Any]]
    top_p: float | None
    user: str | None


class ResponseObject(RequestEcho):
    id: str
    object: Literal["response"]
    created_at: int
    status: Status
    error: ResponseError | None
    incomplete_details: IncompleteDetails | None
    output: list[OutputItem]
    usage: ResponseUsage | None
    previous_response_id: None
    store: Literal[False]
    background: Literal[False]
    truncation: Literal["disabled"]


def new_id(prefix: str) -> str:
    """An id of the gateway's own: `resp_`, `msg_`, `fc_`, `rs_`, `call_` and 24 hex digits."""
    return f"{prefix}_{secrets.token_hex(12)}"


def event(kind: str, data: Mapping[str, object]) -> bytes:
    """One SSE event; the Responses API names the event and repeats its type in the data."""
    return b"event: " + kind.encode() + b"\ndata: " + orjson.dumps(data) + b"\n\n"
