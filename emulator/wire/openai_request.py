"""OpenAI's requests as the emulator reads them: chat and text completions, embeddings.

The models name every field the emulator reads and every sampling option OpenAI's API
takes, with their types and ranges (``temperature`` a number in [0, 2], ``n`` at least 1,
a message's ``role`` one of OpenAI's six), and vLLM's ``ignore_eos`` and ``min_tokens``.
Unknown top-level fields are ignored, as vLLM's server ignores what it does not read and
SDKs add options faster than servers learn them; a known field of the wrong type or out
of range is a 400 naming it (``validation.py``). Two leniencies of vLLM's are kept: a
``tool`` message needs no ``tool_call_id`` and a content part's ``type`` may be any
(only a ``text`` part must carry ``text``).

``reasoning_effort`` (``minimal``, ``low``, ``medium``, ``high``) makes the engine reason
first, as reasoning models served by vLLM do: ``REASONING_TOKENS[effort]`` tokens, at most
half of ``max_tokens``, which holds reasoning and answer together (the answer takes the
rest), sent as ``reasoning_content`` and counted in ``completion_tokens`` and
``completion_tokens_details.reasoning_tokens``.

A chat request offered tools calls one when its last message is the user's, or when
``tool_choice`` forces a call (``required``, or a named function); after a tool's result
(or an assistant's turn) it answers in text, as a model does once it has what it asked for.
"""

from __future__ import annotations

from typing import Annotated, Any, Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationInfo, field_validator
from pydantic_core import PydanticCustomError

from emulator.content.text import estimate_tokens
from emulator.request_parsing import (
    DEFAULT_CHAT_MAX_TOKENS,
    DEFAULT_MAX_TOKENS,
    MAX_CHOICES,
    MAX_TOKENS_LIMIT,
    MAX_TOP_LOGPROBS,
    BadRequest,
    EmbeddingRequest,
    GenerationRequest,
    Sampling,
    ToolSpec,
    message_text,
)
from emulator.wire.validation import openai_bad_request, validated

# How long the emulator reasons for each ``reasoning_effort`` (OpenAI publishes no such
# numbers; a fixed count keeps answers and timings deterministic), before the bound of
# half of max_tokens.
REASONING_TOKENS = {"minimal": 0, "low": 256, "medium": 1024, "high": 4096}


class _Wire(BaseModel):
    model_config = ConfigDict(extra="ignore", strict=True, frozen=True)


def _missing_unless(value: object, needed: bool) -> object:
    if value is None and needed:
        raise PydanticCustomError("missing", "Field required")
    return value


class ContentPart(_Wire):
    type: str
    text: str | None = Field(None, validate_default=True)

    @field_validator("text")
    @classmethod
    def _text_part_has_text(cls, value: str | None, info: ValidationInfo) -> object:
        return _missing_unless(value, info.data.get("type") == "text")


class CalledFunction(_Wire):
    name: str
    arguments: str


class MessageToolCall(_Wire):
    id: str
    type: Literal["function"] = "function"
    function: CalledFunction


Role = Literal["system", "developer", "user", "assistant", "tool", "function"]


class ChatMessage(_Wire):
    role: Role
    content: str | list[ContentPart] | None = Field(None, validate_default=True)
    name: str | None = None
    tool_calls: list[MessageToolCall] | None = None
    tool_call_id: str | None = None

    @field_validator("content")
    @classmethod
    def _content_unless_assistant(cls, value: object, info: ValidationInfo) -> object:
        role = info.data.get("role")
        return _missing_unless(value, role is not None and role != "assistant")


class FunctionDefinition(_Wire):
    name: str = Field(min_length=1)
    description: str | None = None
    parameters: dict[str, Any] | None = None
    strict: bool | None = None


class ChatTool(_Wire):
    type: Literal["function"]
    function: FunctionDefinition


class FunctionName(_Wire):
    name: str = Field(min_length=1)


class NamedToolChoice(_Wire):
    type: Literal["function"]
    function: FunctionName


class JsonSchemaSpec(_Wire):
    name: str | None = None
    document: dict[str, Any] | None = Field(None, alias="schema")
    strict: bool | None = None


class ResponseFormat(_Wire):
    type: Literal["text", "json_object", "json_schema"]
    json_schema: JsonSchemaSpec | None = None


class StreamOptions(_Wire):
    include_usage: bool | None = None


class _Sampled(_Wire):
    """Fields chat and text completions share."""

    model: str = Field(min_length=1)
    temperature: float | None = Field(None, ge=0, le=2)
    top_p: float | None = Field(None, ge=0, le=1)
    n: int | None = Field(None, ge=1, le=MAX_CHOICES)
    seed: int | None = None
    stop: str | list[str] | None = None
    stream: bool | None = None
    stream_options: StreamOptions | None = None
    frequency_penalty: float | None = Field(None, ge=-2, le=2)
    presence_penalty: float | None = Field(None, ge=-2, le=2)
    logit_bias: dict[str, float] | None = None
    user: str | None = None
    ignore_eos: bool | None = None
    """vLLM's: no end-of-sequence, the answer runs to max_tokens."""
    min_tokens: int | None = Field(None, ge=0, le=MAX_TOKENS_LIMIT)
    """vLLM's: no end-of-sequence before this many tokens."""


class ChatCompletionRequest(_Sampled):
    messages: list[ChatMessage] = Field(min_length=1)
    max_tokens: int | None = Field(None, ge=1, le=MAX_TOKENS_LIMIT)
    max_completion_tokens: int | None = Field(None, ge=1, le=MAX_TOKENS_LIMIT)
    logprobs: bool | None = None
    top_logprobs: int | None = Field(None, ge=0, le=MAX_TOP_LOGPROBS)
    tools: list[ChatTool] | None = None
    tool_choice: Literal["none", "auto", "required"] | NamedToolChoice | None = None
    parallel_tool_calls: bool | None = None
    response_format: ResponseFormat | None = None
    reasoning_effort: Literal["minimal", "low", "medium", "high"] | None = None


NonEmpty = Field(min_length=1)
Prompt = (
    str
    | Annotated[list[str], NonEmpty]
    | Annotated[list[int], NonEmpty]
    | Annotated[list[Annotated[list[int], NonEmpty]], NonEmpty]
)


class CompletionRequest(_Sampled):
    prompt: Prompt
    max_tokens: int | None = Field(None, ge=0, le=MAX_TOKENS_LIMIT)
    logprobs: int | None = Field(None, ge=0, le=MAX_TOP_LOGPROBS)
    echo: bool | None = None
    suffix: str | None = None
    best_of: int | None = Field(None, ge=1, le=MAX_CHOICES)


class EmbeddingsRequest(_Wire):
    model: str = Field(min_length=1)
    input: Prompt
    encoding_format: Literal["float", "base64"] | None = None
    dimensions: int | None = Field(None, ge=1, le=16384)
    user: str | None = None


def parse_chat(body: dict[str, Any]) -> GenerationRequest:
    """A chat completion request (or another format's request in its chat form)."""
    request = validated(ChatCompletionRequest, body, openai_bad_request)
    prompt = "\n".join(message_text(message) for message in body["messages"])
    max_tokens = request.max_completion_tokens or request.max_tokens or DEFAULT_CHAT_MAX_TOKENS
    schema, json_object = _response_format(request.response_format)
    reasoning = _reasoning_tokens(request.reasoning_effort, max_tokens)
    answer_tokens = max_tokens - reasoning
    return GenerationRequest(
        model=request.model,
        prompts=(prompt,),
        prompt_tokens=(estimate_tokens(prompt),),
        max_tokens=answer_tokens,
        top_logprobs=(request.top_logprobs or 0) if request.logprobs else None,
        tool=_pick_tool(request),
        json_schema=schema,
        json_object=json_object,
        sampling=_sampling(request),
        ignore_eos=bool(request.ignore_eos),
        min_tokens=min(_min_tokens(request, max_tokens), answer_tokens),
        thinking_tokens=reasoning,
    )


def parse_completion(body: dict[str, Any]) -> GenerationRequest:
    request = validated(CompletionRequest, body, openai_bad_request)
    prompts, counts = _prompts(request.prompt)
    max_tokens = DEFAULT_MAX_TOKENS if request.max_tokens is None else request.max_tokens
    return GenerationRequest(
        model=request.model,
        prompts=prompts,
        prompt_tokens=counts,
        max_tokens=max_tokens,
        top_logprobs=request.logprobs,
        sampling=_sampling(request),
        ignore_eos=bool(request.ignore_eos),
        min_tokens=_min_tokens(request, max_tokens),
    )


def parse_embeddings(body: dict[str, Any]) -> EmbeddingRequest:
    request = validated(EmbeddingsRequest, body, openai_bad_request)
    inputs, counts = _prompts(request.input)
    return EmbeddingRequest(
        model=request.model,
        inputs=inputs,
        prompt_tokens=sum(counts),
        dimensions=request.dimensions,
        base64=request.encoding_format == "base64",
    )


def _sampling(request: _Sampled) -> Sampling:
    stream = bool(request.stream)
    options = request.stream_options
    include_usage = options is not None and options.include_usage is True
    stop = request.stop
    return Sampling(
        n=request.n or 1,
        seed=request.seed,
        stop=(stop,) if isinstance(stop, str) else tuple(stop or ()),
        stream=stream,
        include_usage=stream and include_usage,
    )


def _reasoning_tokens(effort: str | None, max_tokens: int) -> int:
    """Tokens of reasoning before the answer, within ``max_tokens`` (which, as OpenAI
    counts it, holds reasoning and answer): ``REASONING_TOKENS[effort]``, at most half."""
    return min(REASONING_TOKENS[effort], max_tokens // 2) if effort else 0


def _min_tokens(request: _Sampled, max_tokens: int) -> int:
    minimum = request.min_tokens or 0
    if minimum > max_tokens:
        message = (
            f"min_tokens must be less than or equal to max_tokens={max_tokens}, got {minimum}."
        )
        raise BadRequest(message, "min_tokens", code="invalid_value")
    return minimum


def _prompts(
    value: str | list[str] | list[int] | list[list[int]],
) -> tuple[tuple[str, ...], tuple[int, ...]]:
    if isinstance(value, str):
        return (value,), (estimate_tokens(value),)
    if all(isinstance(item, str) for item in value):
        texts = [item for item in value if isinstance(item, str)]
        return tuple(texts), tuple(estimate_tokens(item) for item in texts)
    if all(isinstance(item, int) for item in value):
        return (_token_ids_text(value),), (len(value),)
    arrays = [item for item in value if isinstance(item, list)]
    return tuple(_token_ids_text(ids) for ids in arrays), tuple(len(ids) for ids in arrays)


def _token_ids_text(ids: list[Any]) -> str:
    # Only used to seed generation; the token count comes from the array length.
    return " ".join(str(token) for token in ids)


def _pick_tool(request: ChatCompletionRequest) -> ToolSpec | None:
    """The function to call, or None for a text answer (see the module's docstring)."""
    tools, choice = request.tools, request.tool_choice or "auto"
    if not tools or choice == "none":
        return None
    functions = [tool.function for tool in tools]
    if isinstance(choice, NamedToolChoice):
        wanted = choice.function.name
        chosen = next((function for function in functions if function.name == wanted), None)
        if chosen is None:
            message = f"'tool_choice' names unknown function {wanted!r}."
            raise BadRequest(message, "tool_choice", code="invalid_value")
    elif choice == "required" or request.messages[-1].role == "user":
        chosen = functions[0]
    else:
        return None
    declared = tuple(function.name for function in functions)
    return ToolSpec(chosen.name, chosen.parameters or {"type": "object"}, declared)


def _response_format(value: ResponseFormat | None) -> tuple[object | None, bool]:
    if value is None or value.type == "text":
        return None, False
    if value.type == "json_object":
        return None, True
    spec = value.json_schema
    schema = spec.document if spec is not None else None
    return schema or {"type": "object"}, False
