"""The OpenAI chat messages and tools the translating ingresses build from their clients'
requests (TypedDicts: built there, serialised by orjson as they are).

The messages, tool calls and tools are one shape whichever format they come from, and so
is the request's frame (`ChatRequestFrame`); each ingress's `ChatRequest` adds the options
its format can ask for (`anthropic_ingress.openai_request`, `responses_ingress.chat_request`).
`cache_control` is Anthropic's prompt-cache breakpoint where a Messages client set one (on
parts, messages and tools, the convention of OpenAI-format gateways in front of Claude);
only an Anthropic backend is sent a body that carries it.
"""

from __future__ import annotations

from typing import Any, Literal, NotRequired, TypedDict


class CacheControl(TypedDict):
    type: Literal["ephemeral"]
    ttl: NotRequired[Literal["5m", "1h"]]


class TextPart(TypedDict):
    type: Literal["text"]
    text: str
    cache_control: NotRequired[CacheControl]


class ImageUrl(TypedDict):
    url: str
    detail: NotRequired[str]
    """Only when the client asked for one (the Responses API's `detail`)."""


class ImagePart(TypedDict):
    type: Literal["image_url"]
    image_url: ImageUrl
    cache_control: NotRequired[CacheControl]


ContentPart = TextPart | ImagePart


class FunctionCall(TypedDict):
    name: str
    arguments: str
    """The tool's input as a JSON string."""


class ToolCall(TypedDict):
    id: str
    type: Literal["function"]
    function: FunctionCall


class SystemMessage(TypedDict):
    role: Literal["system"]
    content: str | list[TextPart]


class UserMessage(TypedDict):
    role: Literal["user"]
    content: str | list[ContentPart]


class AssistantMessage(TypedDict):
    role: Literal["assistant"]
    content: str | list[TextPart] | None
    tool_calls: NotRequired[list[ToolCall]]
    cache_control: NotRequired[CacheControl]
    """On the message's last block (its last tool call's, when it made any)."""


class ToolMessage(TypedDict):
    role: Literal["tool"]
    tool_call_id: str
    content: str
    cache_control: NotRequired[CacheControl]


ChatMessage = SystemMessage | UserMessage | AssistantMessage | ToolMessage


class FunctionDefinition(TypedDict):
    name: str
    description: NotRequired[str]
    parameters: NotRequired[dict[str, Any]]
    """Always sent for a Messages tool (its `input_schema` is required)."""
    strict: NotRequired[bool]


class FunctionTool(TypedDict):
    type: Literal["function"]
    function: FunctionDefinition
    cache_control: NotRequired[CacheControl]


class NamedFunction(TypedDict):
    name: str


class NamedToolChoice(TypedDict):
    type: Literal["function"]
    function: NamedFunction


ToolChoice = Literal["auto", "required", "none"] | NamedToolChoice


class StreamOptions(TypedDict):
    include_usage: bool


class ChatRequestFrame(TypedDict):
    model: str
    messages: list[ChatMessage]
    stream: bool
    stream_options: NotRequired[StreamOptions]
    temperature: NotRequired[float]
    top_p: NotRequired[float]
    tools: NotRequired[list[FunctionTool]]
    tool_choice: NotRequired[ToolChoice]
    parallel_tool_calls: NotRequired[bool]


def tool_call(call_id: str, name: str, arguments: str) -> ToolCall:
    return {"id": call_id, "type": "function", "function": {"name": name, "arguments": arguments}}


def user_content(parts: list[ContentPart]) -> str | list[ContentPart]:
    """A user message's parts; a single text as a plain string, which text-only engines and
    chat templates take best (unless it carries a cache breakpoint)."""
    if len(parts) == 1 and parts[0]["type"] == "text" and "cache_control" not in parts[0]:
        return parts[0]["text"]
    return parts
