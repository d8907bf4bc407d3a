"""Anthropic's Messages API wire format: the request we send and what comes back.

What we emit is typed with TypedDicts (built by us, serialised by orjson as they are);
what we parse is validated with pydantic, because it comes from the network. Unknown
content blocks, deltas and stream events parse as `Unknown*` rather than failing: the
API adds new kinds over time and an adapter should skip what it does not translate.
"""

from __future__ import annotations

from typing import Annotated, Any, Literal, NotRequired, TypedDict

from pydantic import BaseModel, ConfigDict, Discriminator, RootModel, Tag, model_validator

# --- what we send -----------------------------------------------------------------------


class CacheControlParam(TypedDict):
    type: Literal["ephemeral"]
    ttl: NotRequired[Literal["5m", "1h"]]


class TextBlock(TypedDict):
    type: Literal["text"]
    text: str
    cache_control: NotRequired[CacheControlParam]


class Base64Source(TypedDict):
    type: Literal["base64"]
    media_type: str
    data: str


class UrlSource(TypedDict):
    type: Literal["url"]
    url: str


class ImageBlock(TypedDict):
    type: Literal["image"]
    source: Base64Source | UrlSource
    cache_control: NotRequired[CacheControlParam]


class ToolUseBlock(TypedDict):
    type: Literal["tool_use"]
    id: str
    name: str
    input: dict[str, Any]
    cache_control: NotRequired[CacheControlParam]


class ToolResultBlock(TypedDict):
    type: Literal["tool_result"]
    tool_use_id: str
    content: str | list[TextBlock | ImageBlock]
    cache_control: NotRequired[CacheControlParam]


ContentBlock = TextBlock | ImageBlock | ToolUseBlock | ToolResultBlock


class MessageParam(TypedDict):
    role: Literal["user", "assistant"]
    content: list[ContentBlock]


class ToolParam(TypedDict):
    name: str
    description: NotRequired[str]
    input_schema: dict[str, Any]
    cache_control: NotRequired[CacheControlParam]


class ToolChoiceParam(TypedDict):
    type: Literal["auto", "any", "tool", "none"]
    name: NotRequired[str]
    disable_parallel_tool_use: NotRequired[bool]


class ThinkingParam(TypedDict):
    type: Literal["enabled", "disabled"]
    budget_tokens: NotRequired[int]


class MetadataParam(TypedDict):
    user_id: str


class MessagesRequest(TypedDict):
    model: str
    messages: list[MessageParam]
    max_tokens: int
    stream: bool
    system: NotRequired[list[TextBlock]]
    temperature: NotRequired[float]
    top_p: NotRequired[float]
    top_k: NotRequired[int]
    stop_sequences: NotRequired[list[str]]
    tools: NotRequired[list[ToolParam]]
    tool_choice: NotRequired[ToolChoiceParam]
    thinking: NotRequired[ThinkingParam]
    metadata: NotRequired[MetadataParam]


# --- what comes back --------------------------------------------------------------------


class _Parsed(BaseModel):
    model_config = ConfigDict(extra="ignore", frozen=True)


def _tag_or_unknown(known: frozenset[str]) -> Discriminator:
    def tag(value: Any) -> str:
        kind = value.get("type") if isinstance(value, dict) else getattr(value, "type", None)
        return kind if kind in known else "unknown"

    return Discriminator(tag)


class MessagesUsage(_Parsed):
    """Token counts; in a stream's `message_delta` every field is optional and cumulative."""

    input_tokens: int | None = None
    output_tokens: int | None = None
    cache_creation_input_tokens: int | None = None
    cache_read_input_tokens: int | None = None
    cache_creation_1h_input_tokens: int | None = None
    """Of the cache writes, those with 1-hour retention (`cache_creation`'s
    `ephemeral_1h_input_tokens`), kept flat so a stream's updates replace it as the rest."""

    @model_validator(mode="before")
    @classmethod
    def _lift_retention(cls, data: Any) -> Any:
        split = data.get("cache_creation") if isinstance(data, dict) else None
        long = split.get("ephemeral_1h_input_tokens") if isinstance(split, dict) else None
        if isinstance(long, int) and not isinstance(long, bool):
            return {**data, "cache_creation_1h_input_tokens": long}
        return data


class TextOut(_Parsed):
    type: Literal["text"]
    text: str


class ThinkingOut(_Parsed):
    type: Literal["thinking"]
    thinking: str


class ToolUseOut(_Parsed):
    type: Literal["tool_use"]
    id: str
    name: str
    input: dict[str, Any]


class UnknownBlock(_Parsed):
    """A block we do not translate (redacted thinking, server tools' blocks, ...)."""

    type: str


BlockOut = Annotated[
    Annotated[TextOut, Tag("text")]
    | Annotated[ThinkingOut, Tag("thinking")]
    | Annotated[ToolUseOut, Tag("tool_use")]
    | Annotated[UnknownBlock, Tag("unknown")],
    _tag_or_unknown(frozenset({"text", "thinking", "tool_use"})),
]


class MessageOut(_Parsed):
    """A whole response (`stream: false`), and in `message_start` its empty head."""

    id: str
    model: str
    content: list[BlockOut] = []
    stop_reason: str | None = None
    usage: MessagesUsage = MessagesUsage()


class ErrorDetail(_Parsed):
    type: str = "api_error"
    message: str = ""


class ErrorBody(_Parsed):
    """`{"type": "error", "error": {"type": ..., "message": ...}}`, as a body or an event."""

    type: Literal["error"]
    error: ErrorDetail


# --- stream events ----------------------------------------------------------------------


class TextDelta(_Parsed):
    type: Literal["text_delta"]
    text: str


class InputJsonDelta(_Parsed):
    type: Literal["input_json_delta"]
    partial_json: str


class ThinkingDelta(_Parsed):
    type: Literal["thinking_delta"]
    thinking: str


class UnknownDelta(_Parsed):
    """Deltas with nothing to relay: `signature_delta`, `citations_delta`, newer kinds."""

    type: str


Delta = Annotated[
    Annotated[TextDelta, Tag("text_delta")]
    | Annotated[InputJsonDelta, Tag("input_json_delta")]
    | Annotated[ThinkingDelta, Tag("thinking_delta")]
    | Annotated[UnknownDelta, Tag("unknown")],
    _tag_or_unknown(frozenset({"text_delta", "input_json_delta", "thinking_delta"})),
]


class MessageStart(_Parsed):
    type: Literal["message_start"]
    message: MessageOut


class BlockStart(_Parsed):
    type: Literal["content_block_start"]
    index: int
    content_block: BlockOut


class BlockDelta(_Parsed):
    type: Literal["content_block_delta"]
    index: int
    delta: Delta


class StopReason(_Parsed):
    stop_reason: str | None = None


class MessageDelta(_Parsed):
    type: Literal["message_delta"]
    delta: StopReason = StopReason()
    usage: MessagesUsage = MessagesUsage()


class MessageStop(_Parsed):
    type: Literal["message_stop"]


class UnknownEvent(_Parsed):
    """`ping`, `content_block_stop` and any event type added later: nothing to relay."""

    type: str


StreamEvent = Annotated[
    Annotated[MessageStart, Tag("message_start")]
    | Annotated[BlockStart, Tag("content_block_start")]
    | Annotated[BlockDelta, Tag("content_block_delta")]
    | Annotated[MessageDelta, Tag("message_delta")]
    | Annotated[MessageStop, Tag("message_stop")]
    | Annotated[ErrorBody, Tag("error")]
    | Annotated[UnknownEvent, Tag("unknown")],
    _tag_or_unknown(
        frozenset(
            {
                "message_start",
                "content_block_start",
                "content_block_delta",
                "message_delta",
                "message_stop",
                "error",
            }
        )
    ),
]


class StreamEventEnvelope(RootModel[StreamEvent]):
    """Parses one SSE `data:` payload: `StreamEventEnvelope.model_validate_json(data).root`."""
