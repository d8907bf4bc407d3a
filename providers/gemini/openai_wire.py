"""The parts of an OpenAI chat request the Gemini adapter translates, as pydantic models.

Lenient on purpose (`extra="ignore"`): clients send fields Gemini has no use for (`user`,
`metadata`, `store`, ...) and the gateway relays them; refusing those would refuse
ordinary traffic. Fields that would change the answer and cannot be honoured are refused
by the translation instead, by name.
"""

from __future__ import annotations

from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field


class _Wire(BaseModel):
    model_config = ConfigDict(extra="ignore", frozen=True)


class ImageUrl(_Wire):
    url: str


class InputAudio(_Wire):
    data: str
    format: str


class FileInput(_Wire):
    file_data: str | None = None


class ContentPart(_Wire):
    type: str
    text: str | None = None
    refusal: str | None = None
    image_url: ImageUrl | None = None
    input_audio: InputAudio | None = None
    file: FileInput | None = None


class FunctionCall(_Wire):
    name: str
    arguments: str = "{}"


class ToolCall(_Wire):
    id: str
    type: Literal["function"] = "function"
    function: FunctionCall
    extra_content: dict[str, Any] | None = None
    """Where a Gemini thought signature rides with a tool call (Google's own convention)."""


class Message(_Wire):
    role: Literal["system", "developer", "user", "assistant", "tool", "function"]
    content: str | list[ContentPart] | None = None
    name: str | None = None
    tool_calls: list[ToolCall] | None = None
    tool_call_id: str | None = None


class FunctionDefinition(_Wire):
    name: str
    description: str | None = None
    parameters: dict[str, Any] | None = None


class Tool(_Wire):
    type: str = "function"
    function: FunctionDefinition | None = None


class NamedFunction(_Wire):
    name: str


class NamedToolChoice(_Wire):
    type: Literal["function"] = "function"
    function: NamedFunction


class StreamOptions(_Wire):
    include_usage: bool = False


class JsonSchemaFormat(_Wire):
    name: str | None = None
    json_schema: dict[str, Any] | None = Field(None, alias="schema")


class ResponseFormat(_Wire):
    type: Literal["text", "json_object", "json_schema"]
    json_schema: JsonSchemaFormat | None = None


class ChatRequest(_Wire):
    model: str = Field(min_length=1)
    messages: list[Message] = Field(min_length=1)
    stream: bool = False
    stream_options: StreamOptions | None = None
    max_tokens: int | None = Field(None, ge=1)
    max_completion_tokens: int | None = Field(None, ge=1)
    temperature: float | None = None
    top_p: float | None = None
    stop: str | list[str] | None = None
    n: int | None = None
    seed: int | None = None
    presence_penalty: float | None = None
    frequency_penalty: float | None = None
    tools: list[Tool] | None = None
    tool_choice: Literal["none", "auto", "required"] | NamedToolChoice | None = None
    reasoning_effort: str | None = None
    response_format: ResponseFormat | None = None

    @property
    def include_usage(self) -> bool:
        return self.stream_options is not None and self.stream_options.include_usage
