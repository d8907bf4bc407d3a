"""The parts of an OpenAI chat request the Gemini adapter translates, as pydantic models.

Lenient on purpose (`extra="ignore"`): clients send fields Gemini has no use for (`user`,
`metadata`, `store`, ...) and the gateway relays them; refusing those would refuse
ordinary traffic. Fields that would change the answer and cannot be honoured are refused
by the translation instead, by name. The parts every translating adapter reads alike are
`providers/openai_chat_request.py`'s (re-exported here).
"""

from __future__ import annotations

from typing import Any, Literal

from pydantic import Field

from providers.openai_chat_request import ChatRequestBase, OpenAIWire, ToolChoiceMode
from providers.openai_chat_request import FunctionCall as FunctionCall  # re-exported
from providers.openai_chat_request import FunctionDefinition as FunctionDefinition
from providers.openai_chat_request import ImageUrl as ImageUrl
from providers.openai_chat_request import NamedFunction as NamedFunction
from providers.openai_chat_request import StreamOptions as StreamOptions
from providers.openai_chat_request import ToolCall as _OpenAIToolCall


class InputAudio(OpenAIWire):
    data: str
    format: str


class FileInput(OpenAIWire):
    file_data: str | None = None


class ContentPart(OpenAIWire):
    type: str
    text: str | None = None
    refusal: str | None = None
    image_url: ImageUrl | None = None
    input_audio: InputAudio | None = None
    file: FileInput | None = None


class ToolCall(_OpenAIToolCall):
    extra_content: dict[str, Any] | None = None
    """Where a Gemini thought signature rides with a tool call (Google's own convention)."""


class Message(OpenAIWire):
    role: Literal["system", "developer", "user", "assistant", "tool", "function"]
    content: str | list[ContentPart] | None = None
    name: str | None = None
    tool_calls: list[ToolCall] | None = None
    tool_call_id: str | None = None


class Tool(OpenAIWire):
    type: str = "function"
    function: FunctionDefinition | None = None


class NamedToolChoice(OpenAIWire):
    type: Literal["function"] = "function"
    function: NamedFunction


class JsonSchemaFormat(OpenAIWire):
    name: str | None = None
    json_schema: dict[str, Any] | None = Field(None, alias="schema")


class ResponseFormat(OpenAIWire):
    type: Literal["text", "json_object", "json_schema"]
    json_schema: JsonSchemaFormat | None = None


class ChatRequest(ChatRequestBase[Message]):
    model: str = Field(min_length=1)
    n: int | None = None
    presence_penalty: float | None = None
    frequency_penalty: float | None = None
    tools: list[Tool] | None = None
    tool_choice: ToolChoiceMode | NamedToolChoice | None = None
    reasoning_effort: str | None = None
    response_format: ResponseFormat | None = None
