"""What comes back from the backend, in OpenAI's shape, as the translating ingresses read
it: a chat completion or a stream chunk, and its usage.

Validated with pydantic because it comes from the network, leniently: unknown fields are
ignored, and what the translation does not need may be missing. Reasoning text is read
from `reasoning_content` (vLLM, DeepSeek, the Anthropic adapter) or `reasoning`.
"""

from __future__ import annotations

from typing import Any

import orjson
from pydantic import BaseModel, ConfigDict, ValidationError

from providers.errors import UpstreamProtocolError
from providers.usage import Usage, usage_of

UNREADABLE_CHUNK = "backend sent an unreadable stream chunk"
"""The error a stream chunk that is no chat completion chunk fails its stream with."""


class _Parsed(BaseModel):
    model_config = ConfigDict(extra="ignore", frozen=True)


class FunctionOut(_Parsed):
    name: str | None = None
    arguments: str | None = None


class ToolCallOut(_Parsed):
    index: int = 0
    """Streams: which call a fragment belongs to."""
    id: str | None = None
    function: FunctionOut = FunctionOut()


class MessageOut(_Parsed):
    """A whole answer's message, and a stream chunk's delta."""

    content: str | None = None
    reasoning_content: str | None = None
    reasoning: str | None = None
    tool_calls: list[ToolCallOut] | None = None

    @property
    def thinking(self) -> str | None:
        return self.reasoning_content or self.reasoning


class ChoiceOut(_Parsed):
    index: int = 0
    message: MessageOut = MessageOut()
    delta: MessageOut = MessageOut()
    finish_reason: str | None = None
    stop_reason: str | int | None = None
    """vLLM's extension: the stop string (or token id) that ended the answer."""


class ErrorOut(_Parsed):
    message: str = ""


class ChatReply(_Parsed):
    """`chat.completion` or `chat.completion.chunk`; `usage` is kept raw for
    `providers.usage.usage_of`, which normalises every backend's counts."""

    id: str = ""
    model: str = ""
    choices: list[ChoiceOut] = []
    usage: dict[str, Any] | None = None
    error: ErrorOut | str | None = None
    """A backend's error event in a stream (`data: {"error": ...}`)."""

    @property
    def first(self) -> ChoiceOut | None:
        return next((c for c in self.choices if c.index == 0), None)


def read_completion(body: bytes) -> tuple[ChatReply, ChoiceOut, Usage | None]:
    """A whole answer, its first choice and its usage; raises UpstreamProtocolError if the
    body is no chat completion or has no choice."""
    reply, usage = _read(body, "backend answered with an unreadable chat completion")
    choice = reply.first
    if choice is None:
        raise UpstreamProtocolError("backend answered a chat completion without choices")
    return reply, choice, usage


def read_chunk(payload: bytes) -> tuple[ChatReply, Usage | None]:
    """One stream chunk (an SSE event's data) and its usage, if it carries any; raises
    UpstreamProtocolError if it is no chunk."""
    return _read(payload, UNREADABLE_CHUNK)


def _read(data: bytes, unreadable: str) -> tuple[ChatReply, Usage | None]:
    try:
        document = orjson.loads(data)
    except orjson.JSONDecodeError:
        raise UpstreamProtocolError(unreadable) from None
    return read_document(document, unreadable)


def read_document(document: Any, unreadable: str) -> tuple[ChatReply, Usage | None]:
    """`document` (parsed JSON) as a reply and its usage; raises UpstreamProtocolError with
    `unreadable` if it is none."""
    try:
        reply = ChatReply.model_validate(document)
    except ValidationError:
        raise UpstreamProtocolError(unreadable) from None
    return reply, usage_of(document)
