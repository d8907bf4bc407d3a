"""Anthropic's Messages request as the emulator reads it: its fields, their types and ranges.

``model``, ``max_tokens`` (1 to the engine's limit) and ``messages`` (roles ``user`` and
``assistant``; content a string or blocks) are required; ``temperature`` and ``top_p``
lie in [0, 1], as Anthropic's API has them. Blocks the emulator reads (``text``,
``tool_use``, ``tool_result``, ``thinking``, ``redacted_thinking``) are checked field
by field (their signatures and data by ``anthropic_thinking.py``); other kinds
(images, documents, server tools' blocks) only need a ``type``. Unknown top-level fields
are ignored (Anthropic's API refuses them; the emulator stays lenient, as for OpenAI).
"""

from __future__ import annotations

from typing import Annotated, Any, Literal

from pydantic import BaseModel, ConfigDict, Discriminator, Field, Tag

from emulator.request_parsing import MAX_TOKENS_LIMIT


class _Wire(BaseModel):
    model_config = ConfigDict(extra="ignore", strict=True, frozen=True)


class TextBlock(_Wire):
    type: Literal["text"]
    text: str


class ToolUseBlock(_Wire):
    type: Literal["tool_use"]
    id: str
    name: str = Field(min_length=1)
    input: dict[str, Any]


class OtherBlock(_Wire):
    """A kind of block the emulator does not read (an image, a document, ...)."""

    type: str


# Tags that no client writes as a key, so an error's path leaves them out.
ResultPart = Annotated[
    Annotated[TextBlock, Tag("text block")] | Annotated[OtherBlock, Tag("other block")],
    Discriminator(lambda block: _tag(block, ("text",))),
]


class ToolResultBlock(_Wire):
    type: Literal["tool_result"]
    tool_use_id: str
    content: str | list[ResultPart] | None = None
    is_error: bool | None = None


class ThinkingBlock(_Wire):
    type: Literal["thinking"]
    thinking: str
    signature: str | None = None


class RedactedThinkingBlock(_Wire):
    type: Literal["redacted_thinking"]
    data: str


_READ = ("text", "tool_use", "tool_result", "thinking", "redacted_thinking")


def _tag(block: Any, read: tuple[str, ...] = _READ) -> str:
    """A block's union member; one that is no object, or has no type, fails as "other"."""
    kind = block.get("type") if isinstance(block, dict) else getattr(block, "type", None)
    return f"{kind} block" if kind in read else "other block"


ContentBlock = Annotated[
    Annotated[TextBlock, Tag("text block")]
    | Annotated[ToolUseBlock, Tag("tool_use block")]
    | Annotated[ToolResultBlock, Tag("tool_result block")]
    | Annotated[ThinkingBlock, Tag("thinking block")]
    | Annotated[RedactedThinkingBlock, Tag("redacted_thinking block")]
    | Annotated[OtherBlock, Tag("other block")],
    Discriminator(_tag),
]


class Message(_Wire):
    role: Literal["user", "assistant"]
    content: str | list[ContentBlock]


class Tool(_Wire):
    """A client tool (with an ``input_schema``) or a server tool (a ``type``, no schema)."""

    name: str = Field(min_length=1)
    type: str | None = None
    description: str | None = None
    input_schema: dict[str, Any] | None = None


class ToolChoice(_Wire):
    type: Literal["auto", "any", "tool", "none"]
    name: str | None = None
    disable_parallel_tool_use: bool | None = None


class Thinking(_Wire):
    type: Literal["enabled", "disabled"]
    budget_tokens: int | None = None


class Metadata(_Wire):
    user_id: str | None = None


class MessagesRequest(_Wire):
    """A ``POST /v1/messages`` body."""

    model: str = Field(min_length=1)
    max_tokens: int = Field(ge=1, le=MAX_TOKENS_LIMIT)
    messages: list[Message] = Field(min_length=1)
    system: str | list[TextBlock] | None = None
    stop_sequences: list[str] | None = None
    stream: bool | None = None
    temperature: float | None = Field(None, ge=0, le=1)
    top_p: float | None = Field(None, ge=0, le=1)
    top_k: int | None = Field(None, ge=0)
    tools: list[Tool] | None = None
    tool_choice: ToolChoice | None = None
    thinking: Thinking | None = None
    metadata: Metadata | None = None
