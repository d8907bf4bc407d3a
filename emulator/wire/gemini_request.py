"""Gemini's ``GenerateContentRequest`` as the emulator reads it: its fields, types and ranges.

Fields come in their JSON names (``generationConfig``) or their proto names
(``generation_config``), as Google's API takes both. ``contents`` is required, each with
parts; a content's role is ``user`` or ``model`` (or the older ``function``);
``temperature`` lies in [0, 2] and ``topP`` in [0, 1]; ``maxOutputTokens`` and
``candidateCount`` are at least 1. Unknown fields are ignored (Google's API refuses them;
the emulator stays lenient, as for OpenAI).
"""

from __future__ import annotations

from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field
from pydantic.alias_generators import to_camel

from emulator.request_parsing import MAX_CHOICES

OUTPUT_TOKEN_LIMIT = 65_536


class _Wire(BaseModel):
    model_config = ConfigDict(
        extra="ignore",
        strict=True,
        frozen=True,
        alias_generator=to_camel,
        validate_by_name=True,
        validate_by_alias=True,
    )


class FunctionCall(_Wire):
    name: str = Field(min_length=1)
    args: dict[str, Any] | None = None
    id: str | None = None


class FunctionResponse(_Wire):
    name: str
    response: dict[str, Any]
    id: str | None = None


class Part(_Wire):
    text: str | None = None
    thought: bool | None = None
    thought_signature: str | None = None
    function_call: FunctionCall | None = None
    function_response: FunctionResponse | None = None
    inline_data: dict[str, Any] | None = None
    file_data: dict[str, Any] | None = None


class Content(_Wire):
    role: Literal["user", "model", "function"] | None = None
    parts: list[Part] = Field(min_length=1)


class SystemInstruction(_Wire):
    role: str | None = None
    parts: list[Part] = Field(default_factory=list)


class FunctionDeclaration(_Wire):
    name: str = Field(min_length=1)
    description: str | None = None
    parameters: dict[str, Any] | None = None
    parameters_json_schema: dict[str, Any] | None = None


class Tool(_Wire):
    function_declarations: list[FunctionDeclaration] | None = None


class FunctionCallingConfig(_Wire):
    mode: str | None = None
    allowed_function_names: list[str] | None = None


class ToolConfig(_Wire):
    function_calling_config: FunctionCallingConfig | None = None


class ThinkingConfig(_Wire):
    thinking_budget: int | None = Field(None, ge=-1)
    thinking_level: str | None = None
    include_thoughts: bool | None = None


class GenerationConfig(_Wire):
    temperature: float | None = Field(None, ge=0, le=2)
    top_p: float | None = Field(None, ge=0, le=1)
    top_k: int | None = Field(None, ge=0)
    candidate_count: int | None = Field(None, ge=1, le=MAX_CHOICES)
    max_output_tokens: int | None = Field(None, ge=1, le=OUTPUT_TOKEN_LIMIT)
    stop_sequences: list[str] | None = None
    seed: int | None = None
    presence_penalty: float | None = None
    frequency_penalty: float | None = None
    response_mime_type: str | None = None
    response_schema: dict[str, Any] | None = None
    response_json_schema: dict[str, Any] | None = None
    thinking_config: ThinkingConfig | None = None


class GenerateContentRequest(_Wire):
    """A ``:generateContent`` or ``:streamGenerateContent`` body (the model is in the path)."""

    contents: list[Content] = Field(min_length=1)
    system_instruction: SystemInstruction | None = None
    tools: list[Tool] | None = None
    tool_config: ToolConfig | None = None
    generation_config: GenerationConfig | None = None
    safety_settings: list[dict[str, Any]] | None = None
    cached_content: str | None = None
