"""Gemini's answer as OpenAI's: parts, finish reason and usage, whole or as stream deltas.

Thought parts become `reasoning_content`; function calls become `tool_calls` with ids of
their own (Gemini's API names calls only by function) and a thought signature, when one
came, under `extra_content.google.thought_signature`, where the request translation
finds it on the way back.
"""

from __future__ import annotations

import uuid
from time import time
from typing import Any

import orjson

from providers.gemini.gemini_wire import (
    FunctionCall,
    GenerateContentResponse,
    Part,
    UsageMetadata,
)

_FILTERED = frozenset(
    {"SAFETY", "RECITATION", "PROHIBITED_CONTENT", "BLOCKLIST", "SPII", "IMAGE_SAFETY"}
)


def decode_response(data: bytes) -> GenerateContentResponse:
    """Raises ValueError (pydantic's ValidationError is one) on a malformed body."""
    return GenerateContentResponse.model_validate_json(data)


def completion_id(response: GenerateContentResponse) -> str:
    return f"chatcmpl-{response.response_id or uuid.uuid4().hex}"


def finish_reason(gemini_reason: str | None, called_tools: bool) -> str | None:
    """OpenAI's finish reason; None while Gemini has not finished."""
    if gemini_reason is None:
        return None
    if gemini_reason in _FILTERED:
        return "content_filter"
    if gemini_reason == "MAX_TOKENS":
        return "length"
    # Gemini says STOP after calling functions; OpenAI clients look for tool_calls.
    return "tool_calls" if called_tools else "stop"


def part_delta(part: Part, tool_index: int) -> dict[str, Any] | None:
    """The OpenAI delta fields one part adds, or None for a part with nothing to show."""
    if part.function_call is not None:
        call = tool_call(part.function_call, part.thought_signature)
        return {"tool_calls": [{"index": tool_index, **call}]}
    if not part.text:
        return None
    return {"reasoning_content" if part.thought else "content": part.text}


def tool_call(call: FunctionCall, thought_signature: str | None) -> dict[str, Any]:
    entry: dict[str, Any] = {
        "id": call.id or f"call_{uuid.uuid4().hex[:24]}",
        "type": "function",
        "function": {"name": call.name, "arguments": orjson.dumps(call.args or {}).decode()},
    }
    if thought_signature:
        entry["extra_content"] = {"google": {"thought_signature": thought_signature}}
    return entry


def openai_usage(meta: UsageMetadata) -> dict[str, Any]:
    # OpenAI counts reasoning among completion tokens; Gemini counts thoughts apart.
    completion = meta.candidates_token_count + meta.thoughts_token_count
    return {
        "prompt_tokens": meta.prompt_token_count,
        "completion_tokens": completion,
        "total_tokens": meta.prompt_token_count + completion,
        "prompt_tokens_details": {"cached_tokens": meta.cached_content_token_count},
        "completion_tokens_details": {"reasoning_tokens": meta.thoughts_token_count},
    }


def chat_completion(response: GenerateContentResponse, model: str) -> dict[str, Any]:
    """A whole `chat.completion` for a whole Gemini response."""
    message: dict[str, Any] = {"role": "assistant", "content": None}
    texts: list[str] = []
    thoughts: list[str] = []
    calls: list[dict[str, Any]] = []
    candidate = response.candidate
    for part in candidate.parts if candidate is not None else []:
        if part.function_call is not None:
            calls.append(tool_call(part.function_call, part.thought_signature))
        elif part.text:
            (thoughts if part.thought else texts).append(part.text)
    if texts or not calls:
        message["content"] = "".join(texts)
    if thoughts:
        message["reasoning_content"] = "".join(thoughts)
    if calls:
        message["tool_calls"] = calls
    reason = "content_filter" if response.blocked else None
    if candidate is not None:
        reason = finish_reason(candidate.finish_reason or "STOP", bool(calls))
    completion: dict[str, Any] = {
        "id": completion_id(response),
        "object": "chat.completion",
        "created": int(time()),
        "model": model,
        "choices": [
            {"index": 0, "message": message, "finish_reason": reason or "stop", "logprobs": None}
        ],
    }
    if response.usage_metadata is not None:
        completion["usage"] = openai_usage(response.usage_metadata)
    return completion
