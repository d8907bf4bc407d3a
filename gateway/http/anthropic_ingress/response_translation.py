"""An OpenAI chat completion as an Anthropic message: blocks, stop reason and usage.

The stop reasons and the usage arithmetic here serve the stream translation too.
"""

from __future__ import annotations

import secrets
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from types import MappingProxyType
from typing import Any

import orjson

from gateway.http.anthropic_ingress.messages_reply import (
    ContentBlock,
    Message,
    StopReason,
    ToolUseBlock,
    Usage,
)
from gateway.http.anthropic_ingress.messages_request import MessagesRequest
from gateway.http.openai_reply import ChoiceOut, ToolCallOut, read_completion
from providers.usage import Usage as OpenAIUsage

STOP_REASONS: Mapping[str, StopReason] = MappingProxyType(
    {
        "stop": "end_turn",
        "length": "max_tokens",
        "tool_calls": "tool_use",
        "function_call": "tool_use",
        "content_filter": "refusal",
    }
)
"""OpenAI's `finish_reason` as Anthropic's `stop_reason`; an unknown one reads end_turn."""


@dataclass(frozen=True, slots=True)
class ReplyContext:
    """What translating an answer needs of its request."""

    model: str
    """The client's `model`, used when the backend names none."""
    stop_sequences: Sequence[str]
    prompt_tokens: int
    """The gateway's estimate, for a backend that reports no usage."""


def reply_context(request: MessagesRequest, prompt_tokens: int) -> ReplyContext:
    return ReplyContext(request.model, request.stop_sequences or (), prompt_tokens)


def stop_reason(
    finish_reason: str | None, matched: str | int | None, stop_sequences: Sequence[str]
) -> tuple[StopReason, str | None]:
    """The stop reason and the stop sequence that ended the answer, when the backend says
    which one did (vLLM's `stop_reason`); other backends' stops read end_turn."""
    if finish_reason == "stop" and isinstance(matched, str) and matched in stop_sequences:
        return "stop_sequence", matched
    return STOP_REASONS.get(finish_reason or "stop", "end_turn"), None


def anthropic_usage(usage: OpenAIUsage | None, *, prompt_tokens: int, output_tokens: int) -> Usage:
    """Anthropic's counts: `input_tokens` are those neither read from nor written to a
    cache, so input + cache read + cache creation = OpenAI's prompt_tokens. The estimates
    stand in when the backend reports nothing."""
    if usage is None:
        return {
            "input_tokens": prompt_tokens,
            "output_tokens": output_tokens,
            "cache_read_input_tokens": 0,
        }
    read = usage.cached_tokens or 0
    written = usage.cache_write_tokens
    out: Usage = {
        "input_tokens": max(0, usage.prompt_tokens - read - (written or 0)),
        "output_tokens": usage.completion_tokens,
        "cache_read_input_tokens": read,
    }
    if written is not None:
        out["cache_creation_input_tokens"] = written
    return out


def message_id(upstream_id: str) -> str:
    if upstream_id.startswith("msg_"):
        return upstream_id
    return f"msg_{upstream_id or secrets.token_hex(12)}"


def tool_input(arguments: str | None) -> dict[str, Any]:
    """A call's arguments as the object Anthropic's `input` must be; arguments that are no
    JSON object (a backend's malformed call) read as an empty one."""
    try:
        value = orjson.loads(arguments or "{}")
    except orjson.JSONDecodeError:
        return {}
    return value if isinstance(value, dict) else {}


def to_message(body: bytes, context: ReplyContext) -> Message:
    """The whole answer; raises UpstreamProtocolError if the body is no chat completion."""
    reply, choice, usage = read_completion(body)
    reason, sequence = stop_reason(choice.finish_reason, choice.stop_reason, context.stop_sequences)
    return {
        "id": message_id(reply.id),
        "type": "message",
        "role": "assistant",
        "model": reply.model or context.model,
        "content": _blocks(choice),
        "stop_reason": reason,
        "stop_sequence": sequence,
        "usage": anthropic_usage(usage, prompt_tokens=context.prompt_tokens, output_tokens=0),
    }


def _blocks(choice: ChoiceOut) -> list[ContentBlock]:
    message = choice.message
    blocks: list[ContentBlock] = []
    if message.thinking:
        blocks.append({"type": "thinking", "thinking": message.thinking, "signature": ""})
    if message.content:
        blocks.append({"type": "text", "text": message.content})
    blocks.extend(_tool_use(call) for call in message.tool_calls or ())
    return blocks


def _tool_use(call: ToolCallOut) -> ToolUseBlock:
    return {
        "type": "tool_use",
        "id": call.id or f"toolu_{secrets.token_hex(12)}",
        "name": call.function.name or "",
        "input": tool_input(call.function.arguments),
    }
