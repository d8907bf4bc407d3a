"""The OpenAI chat request the gateway builds from a Messages request (TypedDicts: built
here, serialised by orjson as they are)."""

from __future__ import annotations

from typing import Any, Literal, NotRequired, TypedDict


class TextPart(TypedDict):
    type: Literal["text"]
    text: str


class ImageUrl(TypedDict):
    url: str


class ImagePart(TypedDict):
    type: Literal["image_url"]
    image_url: ImageUrl


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
    content: str


class UserMessage(TypedDict):
    role: Literal["user"]
    content: str | list[ContentPart]


class AssistantMessage(TypedDict):
    role: Literal["assistant"]
    content: str | None
    tool_calls: NotRequired[list[ToolCall]]


class ToolMessage(TypedDict):
    role: Literal["tool"]
    tool_call_id: str
    content: str


ChatMessage = SystemMessage | UserMessage | AssistantMessage | ToolMessage


class FunctionDefinition(TypedDict):
    name: str
    description: NotRequired[str]
    parameters: dict[str, Any]


class FunctionTool(TypedDict):
    type: Literal["function"]
    function: FunctionDefinition


class NamedFunction(TypedDict):
    name: str


class NamedToolChoice(TypedDict):
    type: Literal["function"]
    function: NamedFunction


class StreamOptions(TypedDict):
    include_usage: bool


ReasoningEffort = Literal["low", "medium", "high"]


class ChatRequest(TypedDict):
    model: str
    messages: list[ChatMessage]
    max_tokens: int
    stream: bool
    stream_options: NotRequired[StreamOptions]
    temperature: NotRequired[float]
    top_p: NotRequired[float]
    stop: NotRequired[list[str]]
    tools: NotRequired[list[FunctionTool]]
    tool_choice: NotRequired[Literal["auto", "required", "none"] | NamedToolChoice]
    parallel_tool_calls: NotRequired[bool]
    reasoning_effort: NotRequired[ReasoningEffort]
