"""Anthropic's Messages API as a front door: ``POST /v1/messages``, its model list, its errors.

A request, checked against ``anthropic_request.py``'s models, becomes the engine's chat
form (``chat_form.py``): the system prompt, then each message's text, its ``tool_use``
blocks as tool calls and its ``tool_result`` blocks as tool messages; tools as functions
with their input schemas. ``thinking`` asks for thinking before the answer:
``min(budget_tokens, max_tokens // 2)`` tokens of it, and the answer may take the rest of
``max_tokens``; thinking blocks sent back are checked, and redacted thinking made, by
``anthropic_thinking.py``. The ``anthropic-beta`` header's names are checked by
``anthropic_betas.py`` and, with ``anthropic-version``, recorded in the engine's stats.
The answer is a ``message`` of thinking (or redacted_thinking), text or tool_use blocks,
whole or as Anthropic's stream of events. In its usage, ``input_tokens`` are the prompt
tokens no cache held and ``cache_read_input_tokens`` those one did: the batched engine's
KV cache (which fills itself: no writes), or an explicit provider prompt cache
(``prompt_cache``), which writes only up to the blocks marked ``cache_control`` and
reports those writes as ``cache_creation_input_tokens``.
"""

from __future__ import annotations

import secrets
from collections.abc import Mapping, Sequence
from dataclasses import replace
from typing import Any

import orjson

from emulator.content.generation import ChoiceOutput
from emulator.rate_limits import RateState, reset_time
from emulator.request_parsing import BadRequest
from emulator.wire.anthropic_betas import BETA_HEADER, read_betas
from emulator.wire.anthropic_cache import cache_pieces
from emulator.wire.anthropic_request import (
    Message,
    MessagesRequest,
    TextBlock,
    Thinking,
    Tool,
    ToolChoice,
    ToolResultBlock,
    ToolUseBlock,
)
from emulator.wire.anthropic_thinking import (
    asks_for_redaction,
    check_thinking_turns,
    redacted_data,
    signature,
)
from emulator.wire.api_format import (
    JSON_HEADERS,
    ClientHeaders,
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
from emulator.wire.openai_request import parse_chat
from emulator.wire.stream_events import StepEvent, UsageSource
from emulator.wire.validation import anthropic_bad_request, validated

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
_TOOL_CHOICES = {"auto": "auto", "any": "required", "none": "none"}
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
        client = ClientHeaders(
            inbound.headers.get(VERSION_HEADER, ""), read_betas(inbound.headers.get(BETA_HEADER))
        )
        request = validated(MessagesRequest, inbound.body, anthropic_bad_request)
        thinking = _thinking_tokens(request.thinking, request.max_tokens)
        check_thinking_turns(request.messages, thinking=thinking > 0)
        system = _text_of(request.system)
        prompt: Json = {
            "model": request.model,
            "messages": chat_messages(system, map(_chat_turn, request.messages)),
            "max_tokens": request.max_tokens - thinking,
            "stop": request.stop_sequences,
            "stream": request.stream,
            **_chat_tools(request.tools, request.tool_choice),
        }
        generation = replace(parse_chat(prompt), thinking_tokens=thinking)
        redacted = thinking > 0 and asks_for_redaction(request.messages)
        writer = AnthropicAnswer(generation.model, redacted=redacted)
        pieces = cache_pieces(inbound.body)
        return EngineCall(generation, prompt, writer, cache_pieces=pieces, client=client)

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
    """One message: a thinking block when asked for (``redacted``: a redacted_thinking
    block), then a text or tool_use block."""

    def __init__(self, model: str, *, redacted: bool = False) -> None:
        self._model = model
        self._id = f"msg_{secrets.token_hex(12)}"
        self._redacted = redacted

    def body(self, choices: Sequence[ChoiceOutput], usage: Json) -> bytes:
        choice = choices[0]
        content = [_answer_block(choice, whole=True)]
        if choice.thinking_pieces:
            thinking = "".join(choice.thinking)
            content.insert(0, _redacted_block() if self._redacted else _thinking_block(thinking))
        message = {**self._head(), "content": content, **_stop(choice)}
        return orjson.dumps({**message, "usage": _usage(usage)})

    def events(self, choices: Sequence[ChoiceOutput], usage: UsageSource) -> list[StepEvent]:
        choice = choices[0]
        steps: list[list[Payload]] = [[] for _ in range(max(1, len(choice.pieces)))]
        steps[0] += [lambda: self._message_start(usage()), _PING]
        index = 0
        if choice.thinking_pieces:
            self._add_thinking(steps, choice.thinking)
            index += 1
        start = _answer_block(choice, whole=False)
        _add_block(steps, index, choice.thinking_pieces, start, _answer_deltas(choice))
        steps[-1] += [lambda: self._message_delta(choice, usage()), _MESSAGE_STOP]
        return [(step, payload) for step, payloads in enumerate(steps) for payload in payloads]

    def error_event(self, message: str) -> bytes:
        return _event({"type": "error", "error": {"type": STREAM_ERROR_TYPE, "message": message}})

    def _add_thinking(self, steps: list[list[Payload]], thinking: list[str]) -> None:
        """Block 0: thinking deltas and the signature; or, redacted, the whole block
        (no deltas) once the thinking is done, as Anthropic streams one."""
        if self._redacted:
            _add_block(steps, 0, len(thinking) - 1, _redacted_block(), [])
            return
        deltas = [{"type": "thinking_delta", "thinking": piece} for piece in thinking]
        signed = {"type": "signature_delta", "signature": signature("".join(thinking))}
        _add_block(steps, 0, 0, _thinking_block(""), deltas, (signed,))

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
    signed = signature(thinking) if thinking else ""
    return {"type": "thinking", "thinking": thinking, "signature": signed}


def _redacted_block() -> Json:
    return {"type": "redacted_thinking", "data": redacted_data()}


def _input(arguments: str) -> Any:
    """The tool's input object; a malformed call's text that is no object stays text."""
    try:
        value = orjson.loads(arguments)
    except orjson.JSONDecodeError:
        return arguments
    return value if isinstance(value, dict) else arguments


def _tool_use_id(call_id: str) -> str:
    return "toolu_" + call_id.removeprefix("call_")


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


def _thinking_tokens(thinking: Thinking | None, max_tokens: int) -> int:
    """How many tokens of thinking the answer starts with."""
    if thinking is None or thinking.type == "disabled":
        return 0
    budget = thinking.budget_tokens
    if budget is None or budget < MIN_THINKING_BUDGET:
        message = f"thinking.budget_tokens: must be at least {MIN_THINKING_BUDGET}"
        raise BadRequest(message, "thinking.budget_tokens")
    if budget >= max_tokens:
        message = "max_tokens must be greater than thinking.budget_tokens"
        raise BadRequest(message, "max_tokens")
    return min(budget, max_tokens // 2)


def _chat_turn(message: Message) -> list[Json]:
    """One message as chat messages: its tool results first, then its text and tool uses."""
    content = message.content
    if isinstance(content, str):
        return [{"role": message.role, "content": content}]
    results = [_text_of(block.content) for block in content if isinstance(block, ToolResultBlock)]
    texts = [block.text for block in content if isinstance(block, TextBlock)]
    calls = [
        tool_call(block.id, block.name, block.input)
        for block in content
        if isinstance(block, ToolUseBlock)
    ]
    return chat_turn(message.role, results, texts, calls)


def _text_of(content: str | Sequence[object] | None) -> str:
    """A system prompt's or tool result's text: a string, or its text blocks joined."""
    if isinstance(content, str):
        return content
    return "".join(block.text for block in content or () if isinstance(block, TextBlock))


def _chat_tools(tools: list[Tool] | None, choice: ToolChoice | None) -> Json:
    """Client tools (those with an input schema) as chat functions, and the tool choice."""
    functions = [
        function_tool(tool.name, tool.input_schema)
        for tool in tools or ()
        if tool.input_schema is not None
    ]
    if not functions:
        return {}
    return {"tools": functions, "tool_choice": _chat_tool_choice(choice)}


def _chat_tool_choice(choice: ToolChoice | None) -> object:
    if choice is None:
        return "auto"
    if choice.type != "tool":
        return _TOOL_CHOICES[choice.type]
    if choice.name is None:
        raise BadRequest("tool_choice.name: Field required", "tool_choice.name")
    return {"type": "function", "function": {"name": choice.name}}
