"""An Anthropic message as an OpenAI chat.completion: content, reasoning, tool calls, usage.

The stop reasons and the usage arithmetic here serve the stream translation too.
"""

from __future__ import annotations

from collections.abc import Mapping
from types import MappingProxyType

import orjson

from providers.anthropic.chat_response import (
    AssistantMessageOut,
    ChatCompletion,
    PromptTokensDetails,
    ToolCallOut,
    UsageOut,
)
from providers.anthropic.messages_wire import (
    MessageOut,
    MessagesUsage,
    TextOut,
    ThinkingOut,
    ToolUseOut,
)

FINISH_REASONS: Mapping[str, str] = MappingProxyType(
    {
        "end_turn": "stop",
        "stop_sequence": "stop",
        "pause_turn": "stop",
        "max_tokens": "length",
        "model_context_window_exceeded": "length",
        "tool_use": "tool_calls",
        "refusal": "content_filter",
    }
)
"""Anthropic's `stop_reason` as OpenAI's `finish_reason`; an unknown reason reads "stop"."""


def finish_reason(stop_reason: str | None) -> str:
    return FINISH_REASONS.get(stop_reason or "end_turn", "stop")


def openai_usage(usage: MessagesUsage) -> UsageOut:
    """OpenAI's usage: the prompt counts every input token, cached, written or neither.

    Anthropic's `input_tokens` are only the tokens after the last cache breakpoint, so
    prompt_tokens = input + cache_read + cache_creation; cached_tokens is the cache read,
    and the cache write goes to `prompt_tokens_details.cache_write_tokens` (of which those
    with 1-hour retention to `cache_write_1h_tokens`).
    """
    read = usage.cache_read_input_tokens
    written = usage.cache_creation_input_tokens
    prompt = (usage.input_tokens or 0) + (read or 0) + (written or 0)
    completion = usage.output_tokens or 0
    out: UsageOut = {
        "prompt_tokens": prompt,
        "completion_tokens": completion,
        "total_tokens": prompt + completion,
    }
    details: PromptTokensDetails = {}
    if read is not None:
        details["cached_tokens"] = read
    if written is not None:
        details["cache_write_tokens"] = written
        if usage.cache_creation_1h_input_tokens is not None:
            details["cache_write_1h_tokens"] = usage.cache_creation_1h_input_tokens
    if details:
        out["prompt_tokens_details"] = details
    return out


def to_chat_completion(message: MessageOut, *, created: int) -> ChatCompletion:
    """The whole response; `model` stays what the backend said (the host renames it)."""
    return {
        "id": message.id,
        "object": "chat.completion",
        "created": created,
        "model": message.model,
        "choices": [
            {
                "index": 0,
                "message": _assistant_message(message),
                "finish_reason": finish_reason(message.stop_reason),
                "logprobs": None,
            }
        ],
        "usage": openai_usage(message.usage),
    }


def chat_completion_bytes(message: MessageOut, *, created: int) -> bytes:
    return orjson.dumps(to_chat_completion(message, created=created))


def _assistant_message(message: MessageOut) -> AssistantMessageOut:
    texts = [block.text for block in message.content if isinstance(block, TextOut)]
    thoughts = [block.thinking for block in message.content if isinstance(block, ThinkingOut)]
    calls: list[ToolCallOut] = [
        {
            "id": block.id,
            "type": "function",
            "function": {"name": block.name, "arguments": orjson.dumps(block.input).decode()},
        }
        for block in message.content
        if isinstance(block, ToolUseOut)
    ]
    out: AssistantMessageOut = {
        "role": "assistant",
        # OpenAI's convention: null content, not "", when the model only called tools.
        "content": "".join(texts) if texts or not calls else None,
        "refusal": None,
    }
    if thoughts:
        out["reasoning_content"] = "".join(thoughts)
    if calls:
        out["tool_calls"] = calls
    return out
