"""OpenAI's chat-completions response and stream chunk, as the Anthropic adapter emits them.

TypedDicts rather than models: the adapter builds these itself and orjson serialises them
as they are, once per response or chunk.
"""

from __future__ import annotations

from typing import Literal, NotRequired, TypedDict


class FunctionOut(TypedDict):
    name: str
    arguments: str
    """The tool's input as a JSON string, as OpenAI clients expect."""


class ToolCallOut(TypedDict):
    id: str
    type: Literal["function"]
    function: FunctionOut


class PromptTokensDetails(TypedDict, total=False):
    cached_tokens: int
    """Read from the prompt cache (Anthropic's `cache_read_input_tokens`)."""
    cache_write_tokens: int
    """Written to the prompt cache (Anthropic's `cache_creation_input_tokens`); not an
    OpenAI field, read by `providers.usage`."""
    cache_write_1h_tokens: int
    """Of those, written with 1-hour retention; not an OpenAI field either."""


class UsageOut(TypedDict):
    prompt_tokens: int
    completion_tokens: int
    total_tokens: int
    prompt_tokens_details: NotRequired[PromptTokensDetails]


class AssistantMessageOut(TypedDict):
    role: Literal["assistant"]
    content: str | None
    refusal: None
    reasoning_content: NotRequired[str]
    """Extended thinking, under the name vLLM and DeepSeek use for reasoning text."""
    tool_calls: NotRequired[list[ToolCallOut]]


class ChoiceOut(TypedDict):
    index: int
    message: AssistantMessageOut
    finish_reason: str
    logprobs: None


class ChatCompletion(TypedDict):
    id: str
    object: Literal["chat.completion"]
    created: int
    model: str
    choices: list[ChoiceOut]
    usage: UsageOut


class FunctionDeltaOut(TypedDict, total=False):
    name: str
    arguments: str


class ToolCallDeltaOut(TypedDict):
    index: int
    """The call's position among this response's tool calls (not Anthropic's block index)."""
    id: NotRequired[str]
    type: NotRequired[Literal["function"]]
    function: FunctionDeltaOut


class DeltaOut(TypedDict, total=False):
    role: Literal["assistant"]
    content: str
    reasoning_content: str
    tool_calls: list[ToolCallDeltaOut]


class ChunkChoiceOut(TypedDict):
    index: int
    delta: DeltaOut
    finish_reason: str | None
    logprobs: None


class ChatCompletionChunk(TypedDict):
    id: str
    object: Literal["chat.completion.chunk"]
    created: int
    model: str
    choices: list[ChunkChoiceOut]
    usage: NotRequired[UsageOut | None]
    """Present, as null, on every chunk when the client asked for usage; filled on the last."""
