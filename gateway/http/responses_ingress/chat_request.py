"""The OpenAI chat request the gateway builds from a Responses request (TypedDicts: built
here, serialised by orjson as they are). The message shapes are those the Messages API's
translation builds; user content (images with `detail`), tools (`strict`), structured output
and the options are the Responses API's own."""

from __future__ import annotations

from typing import Any, Literal, NotRequired, TypedDict

from gateway.http.anthropic_ingress.openai_request import (
    AssistantMessage,
    NamedToolChoice,
    StreamOptions,
    SystemMessage,
    TextPart,
    ToolMessage,
)


class ImageUrl(TypedDict):
    url: str
    detail: NotRequired[str]


class ImagePart(TypedDict):
    type: Literal["image_url"]
    image_url: ImageUrl


ContentPart = TextPart | ImagePart


class UserMessage(TypedDict):
    role: Literal["user"]
    content: str | list[ContentPart]


ChatMessage = SystemMessage | UserMessage | AssistantMessage | ToolMessage


class FunctionDefinition(TypedDict):
    name: str
    description: NotRequired[str]
    parameters: NotRequired[dict[str, Any]]
    strict: NotRequired[bool]


class FunctionTool(TypedDict):
    type: Literal["function"]
    function: FunctionDefinition


class JsonSchema(TypedDict):
    name: str
    schema: dict[str, Any]
    description: NotRequired[str]
    strict: NotRequired[bool]


class JsonSchemaFormat(TypedDict):
    type: Literal["json_schema"]
    json_schema: JsonSchema


class JsonObjectFormat(TypedDict):
    type: Literal["json_object"]


ResponseFormat = JsonSchemaFormat | JsonObjectFormat


class ChatRequest(TypedDict):
    model: str
    messages: list[ChatMessage]
    stream: bool
    stream_options: NotRequired[StreamOptions]
    max_completion_tokens: NotRequired[int]
    temperature: NotRequired[float]
    top_p: NotRequired[float]
    tools: NotRequired[list[FunctionTool]]
    tool_choice: NotRequired[Literal["auto", "required", "none"] | NamedToolChoice]
    parallel_tool_calls: NotRequired[bool]
    reasoning_effort: NotRequired[str]
    response_format: NotRequired[ResponseFormat]
    user: NotRequired[str]
