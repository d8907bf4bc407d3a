"""Anthropic's Messages request as clients send it: validated, with errors naming the field.

Unknown top-level fields are ignored (newer SDKs add options over time; `service_tier`
and the like ask nothing of the answer); of `metadata`, only `user_id` is read. The
blocks the gateway translates are checked field by field; other kinds (documents, server
tools' blocks, ...) are kept as they came (`OpaqueBlock`) for a backend of Anthropic's
API, and refused for any other rather than silently dropped from what the model sees
(`request_translation.inexpressible`).
`citations` are accepted and ignored; thinking blocks go on only to an Anthropic backend.
`cache_control` (type `ephemeral`, `ttl` "5m" or "1h") is read on system blocks, tools and
content blocks, at most `MAX_CACHE_BREAKPOINTS` of them (more, or a malformed one, is a
400 as Anthropic's own): an Anthropic backend gets them with the client's request.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Annotated, Any, Literal, Self, TypeVar

import orjson
from pydantic import (
    BaseModel,
    ConfigDict,
    Discriminator,
    Field,
    Tag,
    ValidationError,
    model_validator,
)

from gateway.config.bounds import (
    DEFAULT_BOUNDS,
    BoundsConfig,
    check_chars,
    check_count,
    check_tokens,
)
from gateway.errors import InvalidRequest

MAX_CACHE_BREAKPOINTS = 4
"""The most `cache_control` blocks the Messages API takes in one request."""


class _Wire(BaseModel):
    model_config = ConfigDict(extra="ignore", frozen=True)


class CacheControl(BaseModel):
    """A prompt-cache breakpoint: the prefix ending with its block is cached."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    type: Literal["ephemeral"]
    ttl: Literal["5m", "1h"] | None = None


class _Cacheable(_Wire):
    cache_control: CacheControl | None = None


class TextBlock(_Cacheable):
    type: Literal["text"]
    text: str


class Base64Source(_Wire):
    type: Literal["base64"]
    media_type: str = Field(min_length=1)
    data: str = Field(min_length=1)


class UrlSource(_Wire):
    type: Literal["url"]
    url: str = Field(min_length=1)


class ImageBlock(_Cacheable):
    type: Literal["image"]
    source: Annotated[Base64Source | UrlSource, Field(discriminator="type")]


class ToolUseBlock(_Cacheable):
    type: Literal["tool_use"]
    id: str = Field(min_length=1)
    name: str = Field(min_length=1)
    input: dict[str, Any]


ToolResultPart = Annotated[TextBlock | ImageBlock, Field(discriminator="type")]


class ToolResultBlock(_Cacheable):
    type: Literal["tool_result"]
    tool_use_id: str = Field(min_length=1)
    content: str | list[ToolResultPart] = ""
    is_error: bool = False


class ThinkingBlock(_Wire):
    """Earlier turns' thinking: sent on as it came to a backend of Anthropic's API (which
    checks its `signature`, or a redacted block's `data`); not to others (OpenAI's chat
    has no input for it)."""

    type: Literal["thinking", "redacted_thinking"]
    signature: str | None = None


class OpaqueBlock(BaseModel):
    """A kind of block the gateway does not read (`document`, `search_result`, server tools'
    blocks, kinds added later): kept as it came for a backend of Anthropic's API, which
    gets the client's own request; no translation for other backends has it."""

    model_config = ConfigDict(extra="allow", frozen=True)

    type: str


def _kind(read: frozenset[str]) -> Callable[[Any], str]:
    """A block's union member: its own type when read, else "opaque" (a block that is no
    object, or has no type, fails there with its own error)."""

    def tag(block: Any) -> str:
        kind = block.get("type") if isinstance(block, dict) else getattr(block, "type", None)
        return kind if kind in read else "opaque"

    return tag


UserBlock = Annotated[
    Annotated[TextBlock, Tag("text")]
    | Annotated[ImageBlock, Tag("image")]
    | Annotated[ToolResultBlock, Tag("tool_result")]
    | Annotated[OpaqueBlock, Tag("opaque")],
    Discriminator(_kind(frozenset({"text", "image", "tool_result"}))),
]
AssistantBlock = Annotated[
    Annotated[TextBlock, Tag("text")]
    | Annotated[ToolUseBlock, Tag("tool_use")]
    | Annotated[ThinkingBlock, Tag("thinking")]
    | Annotated[ThinkingBlock, Tag("redacted_thinking")]
    | Annotated[OpaqueBlock, Tag("opaque")],
    Discriminator(_kind(frozenset({"text", "tool_use", "thinking", "redacted_thinking"}))),
]


class UserMessage(_Wire):
    role: Literal["user"]
    content: str | list[UserBlock]


class AssistantMessage(_Wire):
    role: Literal["assistant"]
    content: str | list[AssistantBlock]


Message = Annotated[UserMessage | AssistantMessage, Field(discriminator="role")]


class Tool(_Cacheable):
    """A client tool; server tools (`type: web_search_...`, ...) are refused when translated."""

    name: str = Field(min_length=1)
    description: str | None = None
    input_schema: dict[str, Any] | None = None
    type: str | None = None


class ToolChoice(_Wire):
    type: Literal["auto", "any", "tool", "none"]
    name: str | None = None
    disable_parallel_tool_use: bool = False

    @model_validator(mode="after")
    def _tool_needs_name(self) -> Self:
        if self.type == "tool" and not self.name:
            raise ValueError("tool_choice of type 'tool' needs the tool's name")
        return self


class Thinking(_Wire):
    type: Literal["enabled", "disabled"]
    budget_tokens: int | None = Field(None, ge=1)

    @model_validator(mode="after")
    def _enabled_needs_budget(self) -> Self:
        if self.type == "enabled" and self.budget_tokens is None:
            raise ValueError("thinking.budget_tokens is required when thinking is enabled")
        return self


class Metadata(_Wire):
    user_id: str | None = None
    """An opaque id of the end user: the request's session key."""


class Conversation(_Wire):
    """What the prompt is made of: all `count_tokens` reads."""

    model: str = Field(min_length=1)
    messages: list[Message] = Field(min_length=1)
    system: str | list[TextBlock] | None = None
    tools: list[Tool] | None = None
    tool_choice: ToolChoice | None = None
    thinking: Thinking | None = None


class MessagesRequest(Conversation):
    """A `POST /v1/messages` body."""

    max_tokens: int = Field(ge=1)
    stream: bool = False
    stop_sequences: list[str] | None = None
    temperature: float | None = None
    top_p: float | None = None
    top_k: int | None = None
    """Accepted and dropped: OpenAI's chat API has no top_k."""
    metadata: Metadata | None = None


_M = TypeVar("_M", bound=BaseModel)


def parse_messages_request(raw: bytes, bounds: BoundsConfig = DEFAULT_BOUNDS) -> MessagesRequest:
    request = _parse(MessagesRequest, raw)
    check_conversation(request, bounds)
    check_tokens("max_tokens", request.max_tokens, bounds.max_output_tokens)
    if request.metadata is not None:
        check_chars("metadata.user_id", request.metadata.user_id, bounds.max_name_chars)
    return request


def parse_conversation(raw: bytes, bounds: BoundsConfig = DEFAULT_BOUNDS) -> Conversation:
    conversation = _parse(Conversation, raw)
    check_conversation(conversation, bounds)
    return conversation


def check_conversation(conversation: Conversation, bounds: BoundsConfig) -> None:
    """The prompt's counts and names within `bounds`, in the Messages API's field names."""
    check_chars("model", conversation.model, bounds.max_name_chars)
    check_count("messages", len(conversation.messages), bounds.max_messages)
    check_count("tools", len(conversation.tools or ()), bounds.max_tools)
    marks = cache_marks(conversation)
    if len(marks) + len(opaque_marks(conversation)) > MAX_CACHE_BREAKPOINTS:
        raise InvalidRequest(
            f"A maximum of {MAX_CACHE_BREAKPOINTS} blocks with cache_control may be "
            f"provided. Found {len(marks) + len(opaque_marks(conversation))}.",
            param="cache_control",
        )
    _check_ttl_order(marks)


def _check_ttl_order(marks: list[CacheControl]) -> None:
    """A 1-hour breakpoint may not follow a 5-minute one (the API refuses the mix in that
    order: a shorter-lived prefix cannot hold a longer-lived one)."""
    short = next((n for n, mark in enumerate(marks) if mark.ttl != "1h"), None)
    if short is not None and any(mark.ttl == "1h" for mark in marks[short + 1 :]):
        raise InvalidRequest(
            "cache_control breakpoints with ttl '1h' must come before those with ttl '5m' "
            "(tools, then system, then messages)",
            param="cache_control",
        )


def count_cache_breakpoints(conversation: Conversation) -> int:
    """The blocks with `cache_control` (see `cache_marks`, `opaque_marks`)."""
    return len(cache_marks(conversation)) + len(opaque_marks(conversation))


def cache_marks(conversation: Conversation) -> list[CacheControl]:
    """The `cache_control` marks in prompt order: tools, system, then each message's
    content (a tool result's parts before the result's own mark)."""
    blocks: list[_Cacheable] = [*(conversation.tools or ())]
    if isinstance(conversation.system, list):
        blocks.extend(conversation.system)
    for message in conversation.messages:
        if isinstance(message.content, str):
            continue
        for block in message.content:
            if isinstance(block, ToolResultBlock) and isinstance(block.content, list):
                blocks.extend(block.content)
            if isinstance(block, _Cacheable):
                blocks.append(block)
    return [block.cache_control for block in blocks if block.cache_control is not None]


def opaque_marks(conversation: Conversation) -> list[CacheControl]:
    """The marks on blocks kept as they came (a marked `document`): they count toward the
    API's 4 as well (their order against the others' is not checked)."""
    marks: list[CacheControl] = []
    for message in conversation.messages:
        for block in message.content if not isinstance(message.content, str) else ():
            mark = getattr(block, "cache_control", None) if isinstance(block, OpaqueBlock) else None
            if isinstance(mark, dict):
                try:
                    marks.append(CacheControl.model_validate(mark))
                except ValidationError:
                    raise InvalidRequest(
                        f"a {block.type} block's cache_control is malformed",
                        param="cache_control",
                    ) from None
    return marks


def _parse(model: type[_M], raw: bytes) -> _M:
    try:
        return model.model_validate_json(raw)
    except ValidationError as exc:
        raise _invalid(exc, raw) from None


def _invalid(exc: ValidationError, raw: bytes) -> InvalidRequest:
    errors = exc.errors(include_url=False)
    if errors[0]["type"] == "json_invalid":
        return InvalidRequest(f"request body is not valid JSON: {errors[0]['msg']}")
    if not errors[0]["loc"]:
        return InvalidRequest("request body must be a JSON object")
    # Of the branches a union tried, the deepest error names the problem (the bad block
    # inside a list, not "content is not a string").
    error = max(errors, key=lambda e: len(e["loc"]))
    try:
        document = orjson.loads(raw)
    except orjson.JSONDecodeError:  # pydantic reads some JSON orjson refuses (NaN)
        document = None
    path = _path(document, error["loc"])
    return InvalidRequest(f"{path}: {error['msg']}" if path else error["msg"], param=path or None)


def _path(document: Any, loc: tuple[str | int, ...]) -> str:
    """The error's location in the client's document. Pydantic's also names the union
    branches it tried ("str", "list[...]", a block's type or a message's role): those
    are left out by walking the document along it."""
    if document is None:
        return ".".join(str(p) for p in loc if "[" not in str(p) and p != "str")
    node, parts = document, []
    for position, item in enumerate(loc):
        last = position == len(loc) - 1
        if _steps_into(node, item, last):
            node = node[item]
            parts.append(str(item))
        elif last and isinstance(node, dict):
            parts.append(str(item))  # a missing field
    return ".".join(parts)


def _steps_into(node: Any, item: str | int, last: bool) -> bool:
    if isinstance(node, list):
        return isinstance(item, int) and item < len(node)
    if not isinstance(node, dict) or item not in node:
        return False
    # A block's type or a message's role, followed by more: the tag of a union branch.
    return last or item not in (node.get("type"), node.get("role"))
