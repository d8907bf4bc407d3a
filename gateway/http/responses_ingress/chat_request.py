"""The OpenAI chat request the gateway builds from a Responses request (TypedDicts: built
here, serialised by orjson as they are): the frame, messages and tools of
`gateway.http.chat_messages`, and the options a Responses request can ask for, structured
output among them.
"""

from __future__ import annotations

from typing import Any, Literal, NotRequired, TypedDict

from gateway.http.chat_messages import ChatRequestFrame


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


class ChatRequest(ChatRequestFrame):
    max_completion_tokens: NotRequired[int]
    reasoning_effort: NotRequired[str]
    response_format: NotRequired[ResponseFormat]
    user: NotRequired[str]
