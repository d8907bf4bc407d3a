"""Anthropic's Messages API as a front door: ``POST /v1/messages``, its model list, its errors.

A request becomes the engine's chat form (``chat_form.py``): the system prompt, then each
message's text, its ``tool_use`` blocks as tool calls and its ``tool_result`` blocks as tool
messages; tools as functions with their input schemas. ``thinking`` asks for thinking
before the answer: ``min(budget_tokens, max_tokens // 2)`` tokens of it, and the answer
gets the rest of ``max_tokens``. The answer is a ``message`` of thinking, text or tool_use blocks,
whole or as Anthropic's stream of events. In its usage, ``input_tokens`` are the prompt
tokens no cache held and ``cache_read_input_tokens`` those one did: the batched engine's
KV cache (which fills itself: no writes), or an explicit provider prompt cache
(``prompt_cache``), which writes only up to the blocks marked ``cache_control`` and
reports those writes as ``cache_creation_input_tokens``.
"""

from __future__ import annotations

import base64
import hashlib
import secrets
from collections.abc import Mapping, Sequence
from dataclasses import replace
from typing import Any

import orjson

from emulator.content.generation import ChoiceOutput
from emulator.rate_limits import RateState, reset_time
from emulator.request_parsing import MAX_TOKENS_LIMIT, BadRequest, parse_chat
from emulator.wire.anthropic_cache import cache_pieces
from emulator.wire.api_format import (
    JSON_HEADERS,
    EngineCall,
    ErrorReply,
    Failure,
    Headers,
    Inbound,
    Json,
    TokenCounts,
)
from emulator.wire.chat_form import chat_messages, chat_turn, function_tool, tool_call
from emulator.wire.openai_bodies import Payload
from emulator.wire.openai_format import retry_after
from emulator.wire.stream_events import StepEvent, UsageSource

VERSION_HEADER = "anthropic-version"
MIN_THINKING_BUDGET = 1024
MAX_MODELS_PAGE = 1000
STREAM_ERROR_TYPE = "overloaded_error"

_ERROR_TYPES = {
    400: "invalid_request_error",
    401: "authentication_error",
    402: "billing_error",
    403: "permission_error",
    404: "not_found_error",
    413: "request_too_large",
    429: "rate_limit_error",
    503: "overloaded_error",
    504: "timeout_error",
    529: "overloaded_error",
}
_STOP_REASONS = {"length": "max_tokens", "tool_calls": "tool_use"}
_TOOL_CHOICES: dict[str, str] = {"auto": "auto", "any": "required", "none": "none"}
_PING = b'event: ping\ndata: {"type":"ping"}\n\n'
_MESSAGE_STOP = b'event: message_stop\ndata: {"type":"message_stop"}\n\n'
_MODELS_CREATED_AT = "2025-01-01T00:00:00Z"


class AnthropicFormat:
    """``POST /v1/messages``."""

    def refusal(
        self, headers: Mapping[str, str], query: Mapping[str, str], api_key: str | None
    ) -> Failure | None:
        if api_key is not None:
            # Anthropic's SDKs send the key as x-api-key or, lately, as a bearer token.
            bearer = headers.get("authorization", "").removeprefix("Bearer ")
            presented = headers.get("x-api-key") or bearer
            if not presented:
                return Failure(401, "x-api-key header is required")
            if presented != api_key:
                return Failure(401, "invalid x-api-key")
        if not headers.get(VERSION_HEADER):
            return Failure(400, f"{VERSION_HEADER}: header is required", VERSION_HEADER)
        return None

    def read(self, inbound: Inbound) -> EngineCall:
        body = inbound.body
        max_tokens = _max_tokens(body)
        thinking = _thinking_tokens(body.get("thinking"), max_tokens)
        prompt: Json = {
            "model": body.get("model"),
            "messages": _chat_messages(body),
            "max_tokens": max_tokens - thinking,
            "stop": _stop_sequences(body.get("stop_sequences")),
            "stream": body.get("stream"),
            **_chat_tools(body.get("tools"), body.get("tool_choice")),
        }
        generation = replace(parse_chat(prompt), thinking_tokens=thinking)
        writer = AnthropicAnswer(generation.model)
        return EngineCall(generation, prompt, writer, cache_pieces=cache_pieces(body))

    def error(self, failure: Failure) -> ErrorReply:
        error_type = _ERROR_TYPES.get(failure.status)
        if error_type is None:
            error_type = "api_error" if failure.status >= 500 else "invalid_request_error"
        body = {"type": "error", "error": {"type": error_type, "message": failure.message}}
        headers = list(JSON_HEADERS)
        if failure.retry_after_s is not None:
            headers.append(retry_after(failure.retry_after_s))
        return ErrorReply(orjson.dumps(body), headers)

    def rate_headers(self, state: RateState) -> Headers:
        """``anthropic-ratelimit-{requests,tokens}-{limit,remaining,reset}``."""
        headers: Headers = []
        for kind, budget in (("requests", state.requests), ("tokens", state.tokens)):
            if budget is not None:
                prefix = f"anthropic-ratelimit-{kind}-"
                headers += [
                    ((prefix + "limit").encode(), str(budget.limit).encode()),
                    ((prefix + "remaining").encode(), str(budget.remaining).encode()),
                    ((prefix + "reset").encode(), reset_time(budget.reset_s).encode()),
                ]
        return headers


def models_body(models: Sequence[str], query: Mapping[str, str]) -> bytes:
    """``GET /v1/models`` as Anthropic pages it (``limit``, default 20)."""
    raw_limit = query.get("limit", "20")
    limit = int(raw_limit) if raw_limit.isdigit() else 20
    limit = min(max(1, limit), MAX_MODELS_PAGE)
    page = [
        {"type": "model", "id": name, "display_name": name, "created_at": _MODELS_CREATED_AT}
        for name in models[:limit]
    ]
    first, last = (page[0]["id"], page[-1]["id"]) if page else (None, None)
    listing = {"data": page, "has_more": len(models) > limit, "first_id": first, "last_id": last}
    return orjson.dumps(listing)


class AnthropicAnswer:
    """One message: a thinking block when asked for, then a text or tool_use block."""

    def __init__(self, model: str) -> None:
        self._model = model
        self._id = f"msg_{secrets.token_hex(12)}"

    def body(self, choices: Sequence[ChoiceOutput], usage: Json) -> bytes:
        choice = choices[0]
        content = [_answer_block(choice, whole=True)]
        if choice.thinking_pieces:
            content.insert(0, _thinking_block("".join(choice.thinking)))
        message = {**self._head(), "content": content, **_stop(choice)}
        return orjson.dumps({**message, "usage": _usage(usage)})

    def events(self, choices: Sequence[ChoiceOutput], usage: UsageSource) -> list[StepEvent]:
        choice = choices[0]
        steps: list[list[Payload]] = [[] for _ in range(max(1, len(choice.pieces)))]
        steps[0] += [lambda: self._message_start(usage()), _PING]
        index = 0
        if choice.thinking_pieces:
            thinking = choice.thinking
            deltas = [{"type": "thinking_delta", "thinking": piece} for piece in thinking]
            signed = {"type": "signature_delta", "signature": _signature("".join(thinking))}
            _add_block(steps, index, 0, _thinking_block(""), deltas, (signed,))
            index += 1
        start = _answer_block(choice, whole=False)
        _add_block(steps, index, choice.thinking_pieces, start, _answer_deltas(choice))
        steps[-1] += [lambda: self._message_delta(choice, usage()), _MESSAGE_STOP]
        return [(step, payload) for step, payloads in enumerate(steps) for payload in payloads]

    def error_event(self, message: str) -> bytes:
        return _event({"type": "error", "error": {"type": STREAM_ERROR_TYPE, "message": message}})

    def _head(self) -> Json:
        return {"id": self._id, "type": "message", "role": "assistant", "model": self._model}

    def _message_start(self, usage: Json) -> bytes:
        counts = _usage(usage)
        counts["output_tokens"] = min(1, counts["output_tokens"])
        message = {**self._head(), "content": [], "stop_reason": None, "stop_sequence": None}
        return _event({"type": "message_start", "message": {**message, "usage": counts}})

    def _message_delta(self, choice: ChoiceOutput, usage: Json) -> bytes:
        return _event({"type": "message_delta", "delta": _stop(choice), "usage": _usage(usage)})


def _add_block(
    steps: list[list[Payload]],
    index: int,
    first: int,
    block: Json,
    deltas: list[Json],
    closing: tuple[Json, ...] = (),
) -> None:
    """A block's start, its deltas one per step from step ``first``, then ``closing``
    deltas (a thinking block's signature) and its stop with the last of them."""
    last_step = len(steps) - 1
    step = min(first, last_step)
    steps[step].append(
        _event({"type": "content_block_start", "index": index, "content_block": block})
    )
    for offset, delta in enumerate(deltas):
        step = min(first + offset, last_step)
        steps[step].append(_delta(index, delta))
    steps[step] += [_delta(index, delta) for delta in closing]
    steps[step].append(_event({"type": "content_block_stop", "index": index}))


def _delta(index: int, delta: Json) -> bytes:
    return _event({"type": "content_block_delta", "index": index, "delta": delta})


def _answer_deltas(choice: ChoiceOutput) -> list[Json]:
    if choice.tool_call is None:
        return [{"type": "text_delta", "text": piece} for piece in choice.answer]
    return [{"type": "input_json_delta", "partial_json": piece} for piece in choice.answer]


def _answer_block(choice: ChoiceOutput, *, whole: bool) -> Json:
    """The text or tool_use block: whole, or empty as a stream's block starts."""
    text = "".join(choice.answer) if whole else ""
    call = choice.tool_call
    if call is None:
        return {"type": "text", "text": text}
    tool_input = _input(text) if whole else {}
    return {"type": "tool_use", "id": _tool_use_id(call.id), "name": call.name, "input": tool_input}


def _thinking_block(thinking: str) -> Json:
    signature = _signature(thinking) if thinking else ""
    return {"type": "thinking", "thinking": thinking, "signature": signature}


def _input(arguments: str) -> Any:
    """The tool's input object; a malformed call's text that is no object stays text."""
    try:
        value = orjson.loads(arguments)
    except orjson.JSONDecodeError:
        return arguments
    return value if isinstance(value, dict) else arguments


def _tool_use_id(call_id: str) -> str:
    return "toolu_" + call_id.removeprefix("call_")


def _signature(thinking: str) -> str:
    # Opaque to clients, as Anthropic's are; stable for the same thinking.
    return base64.b64encode(hashlib.blake2b(thinking.encode(), digest_size=32).digest()).decode()


def _stop(choice: ChoiceOutput) -> Json:
    reason = _STOP_REASONS.get(choice.finish_reason)
    if reason is None:
        reason = "stop_sequence" if choice.stop_sequence is not None else "end_turn"
    return {"stop_reason": reason, "stop_sequence": choice.stop_sequence}


def _usage(usage: Json) -> Json:
    counts = TokenCounts.of(usage)
    return {
        "input_tokens": counts.prompt - counts.cached - counts.written,
        "cache_creation_input_tokens": counts.written,
        "cache_read_input_tokens": counts.cached,
        "output_tokens": counts.completion,
    }


def _event(data: Json) -> bytes:
    name = str(data["type"]).encode()
    return b"event: " + name + b"\ndata: " + orjson.dumps(data) + b"\n\n"


# --- reading a request ------------------------------------------------------------------


def _max_tokens(body: Json) -> int:
    value = body.get("max_tokens")
    if isinstance(value, bool) or not isinstance(value, int):
        raise BadRequest("max_tokens: Field required (an integer)", "max_tokens")
    if not 1 <= value <= MAX_TOKENS_LIMIT:
        raise BadRequest(f"max_tokens: must be between 1 and {MAX_TOKENS_LIMIT}", "max_tokens")
    return value


def _thinking_tokens(thinking: object, max_tokens: int) -> int:
    """How many tokens of thinking the answer starts with."""
    if thinking is None:
        return 0
    kind = thinking.get("type") if isinstance(thinking, dict) else None
    if kind == "disabled":
        return 0
    if kind != "enabled" or not isinstance(thinking, dict):
        raise BadRequest("thinking.type: must be 'enabled' or 'disabled'", "thinking.type")
    budget = thinking.get("budget_tokens")
    if isinstance(budget, bool) or not isinstance(budget, int) or budget < MIN_THINKING_BUDGET:
        message = f"thinking.budget_tokens: must be at least {MIN_THINKING_BUDGET}"
        raise BadRequest(message, "thinking.budget_tokens")
    if budget >= max_tokens:
        message = "max_tokens must be greater than thinking.budget_tokens"
        raise BadRequest(message, "max_tokens")
    return min(budget, max_tokens // 2)


def _stop_sequences(value: object) -> list[str] | None:
    if value is None:
        return None
    if not isinstance(value, list) or not all(isinstance(item, str) for item in value):
        raise BadRequest("stop_sequences: must be an array of strings", "stop_sequences")
    return value


def _chat_messages(body: Json) -> list[Json]:
    messages = body.get("messages")
    if not isinstance(messages, list) or not messages:
        raise BadRequest("messages: at least one message is required", "messages")
    return chat_messages(_text_of(body.get("system")), map(_chat_turn, messages))


def _chat_turn(message: object) -> list[Json]:
    """One message as chat messages: its tool results first, then its text and tool uses."""
    role = message.get("role") if isinstance(message, dict) else None
    if role not in ("user", "assistant") or not isinstance(message, dict):
        raise BadRequest("messages: each message needs the role 'user' or 'assistant'", "messages")
    content = message.get("content")
    if isinstance(content, str):
        return [{"role": role, "content": content}]
    if not isinstance(content, list):
        raise BadRequest("messages: content must be a string or an array of blocks", "messages")
    blocks = [block for block in content if isinstance(block, dict)]
    results = [_text_of(b.get("content")) for b in blocks if b.get("type") == "tool_result"]
    texts = [str(block.get("text", "")) for block in blocks if block.get("type") == "text"]
    calls = [
        tool_call(block.get("id"), block.get("name"), block.get("input"))
        for block in blocks
        if block.get("type") == "tool_use"
    ]
    return chat_turn(role, results, texts, calls)


def _text_of(content: object) -> str:
    """A system prompt's or tool result's text: a string, or its text blocks joined."""
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        return "".join(
            str(block.get("text", ""))
            for block in content
            if isinstance(block, dict) and block.get("type") == "text"
        )
    return ""


def _chat_tools(tools: object, choice: object) -> Json:
    """Client tools (those with an input schema) as chat functions, and the tool choice."""
    if tools is None:
        return {}
    if not isinstance(tools, list):
        raise BadRequest("tools: must be an array", "tools")
    functions = [
        function_tool(tool.get("name"), schema)
        for tool in tools
        if isinstance(tool, dict) and isinstance(schema := tool.get("input_schema"), dict)
    ]
    if not functions:
        return {}
    return {"tools": functions, "tool_choice": _chat_tool_choice(choice)}


def _chat_tool_choice(choice: object) -> object:
    if choice is None:
        return "auto"
    kind = choice.get("type") if isinstance(choice, dict) else None
    if isinstance(kind, str) and kind in _TOOL_CHOICES:
        return _TOOL_CHOICES[kind]
    if kind == "tool" and isinstance(choice, dict):
        return {"type": "function", "function": {"name": choice.get("name")}}
    raise BadRequest("tool_choice.type: must be auto, any, tool or none", "tool_choice")
