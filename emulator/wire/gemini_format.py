"""Google's Gemini API as a front door: ``models/{model}:generateContent``, its stream
(``:streamGenerateContent?alt=sse``), its model list and its errors.

A request becomes the engine's chat form (``chat_form.py``): ``systemInstruction``, then
each content's text (``model`` turns as the assistant), ``functionCall`` parts as tool
calls and ``functionResponse`` parts as tool messages; function declarations as functions
with their schemas. A ``thinkingConfig`` budget (or level) asks for thinking before the
answer: ``min(budget, maxOutputTokens // 2)`` tokens of it, within ``maxOutputTokens``,
shown as thought parts when ``includeThoughts`` is set. Streams send one event per
decode step that shows something; a function call comes whole, as Gemini sends it.
"""

from __future__ import annotations

import secrets
from collections.abc import Mapping, Sequence
from dataclasses import replace
from typing import Any

import orjson

from emulator.content.generation import ChoiceOutput
from emulator.rate_limits import RateState
from emulator.request_parsing import DEFAULT_MAX_TOKENS, MAX_CHOICES, BadRequest, parse_chat
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
from emulator.wire.stream_events import StepEvent, UsageSource

RETRY_INFO = "type.googleapis.com/google.rpc.RetryInfo"
OUTPUT_TOKEN_LIMIT = 65_536
STREAM_ERROR_STATUS = 503

_STATUS_NAMES = {
    400: "INVALID_ARGUMENT",
    401: "UNAUTHENTICATED",
    403: "PERMISSION_DENIED",
    404: "NOT_FOUND",
    409: "ABORTED",
    429: "RESOURCE_EXHAUSTED",
    499: "CANCELLED",
    500: "INTERNAL",
    501: "UNIMPLEMENTED",
    503: "UNAVAILABLE",
    504: "DEADLINE_EXCEEDED",
}
_FINISH_REASONS = {"length": "MAX_TOKENS", "stop": "STOP", "tool_calls": "STOP"}
_CALLING_MODES = {"AUTO": "auto", "ANY": "required", "VALIDATED": "required", "NONE": "none"}
_THINKING_LEVELS = {"MINIMAL": 0, "LOW": 1024, "MEDIUM": 8192, "HIGH": 24576}
_GENERATION_METHODS = ["generateContent", "streamGenerateContent", "countTokens"]


class GeminiFormat:
    """``:generateContent``, or ``:streamGenerateContent`` with ``streaming=True``."""

    def __init__(self, *, streaming: bool) -> None:
        self.streaming = streaming

    def refusal(
        self, headers: Mapping[str, str], query: Mapping[str, str], api_key: str | None
    ) -> Failure | None:
        if api_key is None:
            return None
        presented = headers.get("x-goog-api-key") or query.get("key")
        if presented == api_key:
            return None
        return Failure(401, "API key not valid. Please pass a valid API key.")

    def read(self, inbound: Inbound) -> EngineCall:
        if self.streaming and inbound.query.get("alt") != "sse":
            raise BadRequest("The emulator streams Server-Sent Events only: add ?alt=sse.", "alt")
        body, model = inbound.body, inbound.path["model"]
        config = _object(_field(body, "generationConfig"), "generationConfig")
        max_tokens = _int(config, "maxOutputTokens", DEFAULT_MAX_TOKENS, 1)
        thinking, shown = _thinking(_field(config, "thinkingConfig"), max_tokens)
        prompt: Json = {
            "model": model,
            "messages": _chat_messages(body),
            "max_tokens": max_tokens - thinking,
            "n": _int(config, "candidateCount", 1, 1, MAX_CHOICES),
            "seed": _field(config, "seed"),
            "stop": _field(config, "stopSequences"),
            "stream": self.streaming,
            **_response_format(config),
            **_chat_tools(body),
        }
        generation = replace(parse_chat(prompt), thinking_tokens=thinking)
        return EngineCall(generation, prompt, GeminiAnswer(model, show_thoughts=shown))

    def error(self, failure: Failure) -> ErrorReply:
        return ErrorReply(orjson.dumps({"error": error_object(failure)}), list(JSON_HEADERS))

    def rate_headers(self, state: RateState) -> Headers:
        # Gemini reports no budgets in headers; a refusal says when to retry in its body.
        return []


def error_object(failure: Failure) -> Json:
    """``{code, message, status}``, with a RetryInfo detail when a wait is known."""
    status = failure.status
    name = _STATUS_NAMES.get(status, "INTERNAL" if status >= 500 else "FAILED_PRECONDITION")
    error: Json = {"code": status, "message": failure.message, "status": name}
    if failure.retry_after_s is not None:
        delay = f"{round(failure.retry_after_s, 3):g}s"
        error["details"] = [{"@type": RETRY_INFO, "retryDelay": delay}]
    return error


def model_resource(name: str) -> Json:
    return {
        "name": f"models/{name}",
        "version": "001",
        "displayName": name,
        "inputTokenLimit": 1_048_576,
        "outputTokenLimit": OUTPUT_TOKEN_LIMIT,
        "supportedGenerationMethods": _GENERATION_METHODS,
    }


def models_body(models: Sequence[str]) -> bytes:
    return orjson.dumps({"models": [model_resource(name) for name in models]})


class GeminiAnswer:
    """One ``GenerateContentResponse``: a candidate per choice, usage metadata."""

    def __init__(self, model: str, *, show_thoughts: bool) -> None:
        self._model = model
        self._show_thoughts = show_thoughts
        self._id = secrets.token_urlsafe(16)

    def body(self, choices: Sequence[ChoiceOutput], usage: Json) -> bytes:
        candidates = [
            self._candidate(choice, "".join(choice.thinking), "".join(choice.answer), final=True)
            for choice in choices
        ]
        return self._response(candidates, _usage_metadata(choices, usage))

    def events(self, choices: Sequence[ChoiceOutput], usage: UsageSource) -> list[StepEvent]:
        steps = max((len(choice.pieces) for choice in choices), default=0)
        per_step: list[list[Json]] = [[] for _ in range(max(1, steps))]
        for choice in choices:
            for step, candidate in self._candidate_steps(choice):
                per_step[step].append(candidate)
        last = len(per_step) - 1
        events: list[StepEvent] = [
            (step, self._event(candidates))
            for step, candidates in enumerate(per_step[:last])
            if candidates
        ]
        final = per_step[last]
        events.append((last, lambda: self._event(final, _usage_metadata(choices, usage()))))
        return events

    def error_event(self, message: str) -> bytes:
        error = error_object(Failure(STREAM_ERROR_STATUS, message))
        return b"data: " + orjson.dumps({"error": error}) + b"\r\n\r\n"

    def _candidate_steps(self, choice: ChoiceOutput) -> list[tuple[int, Json]]:
        """What one choice shows at each decode step; its call comes whole, at its end."""
        pieces, thinking = choice.pieces, choice.thinking_pieces
        last = max(1, len(pieces)) - 1
        steps: list[tuple[int, Json]] = []
        for step, piece in enumerate(pieces[:last]):
            thought, answer = (piece, "") if step < thinking else ("", piece)
            candidate = self._candidate(choice, thought, answer, final=False)
            if candidate["content"]["parts"]:
                steps.append((step, candidate))
        piece = pieces[last] if pieces else ""
        thought, answer = (piece, "") if last < thinking else ("", piece)
        if choice.tool_call is not None:
            answer = "".join(choice.answer)
        steps.append((last, self._candidate(choice, thought, answer, final=True)))
        return steps

    def _candidate(self, choice: ChoiceOutput, thought: str, answer: str, *, final: bool) -> Json:
        parts: list[Json] = []
        if thought and self._show_thoughts:
            parts.append({"text": thought, "thought": True})
        candidate: Json = {"content": {"role": "model", "parts": parts}, "index": choice.index}
        tool_call = choice.tool_call
        if tool_call is None:
            if answer or (final and not parts):
                parts.append({"text": answer})
        elif final:
            call = _function_call(tool_call.name, answer)
            if call is None:
                # Gemini's own way of saying it produced a call it could not parse.
                candidate["finishMessage"] = f"Malformed function call: {answer.strip()}"
                candidate["finishReason"] = "MALFORMED_FUNCTION_CALL"
                return candidate
            parts.append({"functionCall": call})
        if final:
            candidate["finishReason"] = _FINISH_REASONS.get(choice.finish_reason, "STOP")
        return candidate

    def _response(self, candidates: list[Json], usage: Json | None = None) -> bytes:
        response: Json = {"candidates": candidates}
        if usage is not None:
            response["usageMetadata"] = usage
        response |= {"modelVersion": self._model, "responseId": self._id}
        return orjson.dumps(response)

    def _event(self, candidates: list[Json], usage: Json | None = None) -> bytes:
        return b"data: " + self._response(candidates, usage) + b"\r\n\r\n"


def _function_call(name: str, arguments: str) -> Json | None:
    """The call, or None when its arguments are not an object (a malformed call)."""
    try:
        args = orjson.loads(arguments)
    except orjson.JSONDecodeError:
        return None
    return {"name": name, "args": args} if isinstance(args, dict) else None


def _usage_metadata(choices: Sequence[ChoiceOutput], usage: Json) -> Json:
    counts = TokenCounts.of(usage)
    thoughts = sum(choice.thinking_pieces for choice in choices)
    metadata: Json = {
        "promptTokenCount": counts.prompt,
        "candidatesTokenCount": counts.completion - thoughts,
        "totalTokenCount": counts.prompt + counts.completion,
        "cachedContentTokenCount": counts.cached,
    }
    if thoughts:
        metadata["thoughtsTokenCount"] = thoughts
    return metadata


# --- reading a request ------------------------------------------------------------------


def _field(body: Json, name: str) -> Any:
    """A field by its JSON name or its proto name (``generationConfig``, ``generation_config``)."""
    if name in body:
        return body[name]
    snake = "".join(f"_{char.lower()}" if char.isupper() else char for char in name)
    return body.get(snake)


def _object(value: object, name: str) -> Json:
    if value is None:
        return {}
    if not isinstance(value, dict):
        raise BadRequest(f"Invalid value at '{name}': must be an object.", name)
    return value


def _int(
    config: Json, name: str, default: int, minimum: int, maximum: int = OUTPUT_TOKEN_LIMIT
) -> int:
    value = _field(config, name)
    if value is None:
        return default
    if isinstance(value, bool) or not isinstance(value, int) or not minimum <= value <= maximum:
        message = f"Invalid value at 'generation_config.{name}': between {minimum} and {maximum}."
        raise BadRequest(message, name)
    return value


def _thinking(config: object, max_tokens: int) -> tuple[int, bool]:
    """Thinking tokens before the answer, and whether thought parts are shown."""
    thinking = _object(config, "thinkingConfig")
    budget = _field(thinking, "thinkingBudget")
    level = _field(thinking, "thinkingLevel")
    if budget is None and isinstance(level, str):
        budget = _THINKING_LEVELS.get(level.upper())
    if budget == -1:  # dynamic: the model decides; the emulator takes the most it may
        budget = max_tokens
    if budget is not None and (isinstance(budget, bool) or not isinstance(budget, int)):
        raise BadRequest("Invalid value at 'thinking_config.thinking_budget'.", "thinkingBudget")
    tokens = min(budget or 0, max_tokens // 2)
    return max(0, tokens), bool(_field(thinking, "includeThoughts")) and tokens > 0


def _response_format(config: Json) -> Json:
    if _field(config, "responseMimeType") != "application/json":
        return {}
    schema = _field(config, "responseJsonSchema") or _field(config, "responseSchema")
    if schema is None:
        return {"response_format": {"type": "json_object"}}
    spec = {"name": "response", "schema": _json_schema(schema)}
    return {"response_format": {"type": "json_schema", "json_schema": spec}}


def _json_schema(schema: object) -> object:
    """Gemini's OpenAPI schemas name types in capitals (``OBJECT``); JSON Schema does not."""
    if isinstance(schema, dict):
        return {
            key: value.lower() if key == "type" and isinstance(value, str) else _json_schema(value)
            for key, value in schema.items()
        }
    if isinstance(schema, list):
        return [_json_schema(item) for item in schema]
    return schema


def _chat_messages(body: Json) -> list[Json]:
    contents = body.get("contents")
    if not isinstance(contents, list) or not contents:
        raise BadRequest("* GenerateContentRequest.contents: contents is not specified", "contents")
    system = _object(_field(body, "systemInstruction"), "systemInstruction")
    return chat_messages("".join(_texts(system.get("parts"))), map(_chat_turn, contents))


def _chat_turn(content: object) -> list[Json]:
    """One content as chat messages: function responses, then its text and calls."""
    turn = _object(content, "contents")
    role = "assistant" if turn.get("role") == "model" else "user"
    parts = [part for part in turn.get("parts") or [] if isinstance(part, dict)]
    results = [
        orjson.dumps(response).decode()
        for part in parts
        if (response := _field(part, "functionResponse")) is not None
    ]
    calls = [
        tool_call(f"call_{index}", call.get("name"), call.get("args"))
        for index, part in enumerate(parts)
        if isinstance(call := _field(part, "functionCall"), dict)
    ]
    return chat_turn(role, results, _texts(parts), calls)


def _texts(parts: object) -> list[str]:
    """The text of parts that are not thoughts (earlier turns' thoughts are not replayed)."""
    if not isinstance(parts, list):
        return []
    return [
        part["text"]
        for part in parts
        if isinstance(part, dict) and isinstance(part.get("text"), str) and not part.get("thought")
    ]


def _chat_tools(body: Json) -> Json:
    tools = body.get("tools")
    declarations = [
        declaration
        for tool in (tools if isinstance(tools, list) else [])
        if isinstance(tool, dict)
        for declaration in _field(tool, "functionDeclarations") or []
        if isinstance(declaration, dict)
    ]
    if not declarations:
        return {}
    functions = [function_tool(d.get("name"), _parameters(d)) for d in declarations]
    return {"tools": functions, "tool_choice": _tool_choice(body)}


def _parameters(declaration: Json) -> object:
    schema = _field(declaration, "parametersJsonSchema")
    if schema is None:
        schema = _json_schema(declaration.get("parameters"))
    return schema or {"type": "object"}


def _tool_choice(body: Json) -> object:
    tool_config = _object(_field(body, "toolConfig"), "toolConfig")
    calling = _object(_field(tool_config, "functionCallingConfig"), "functionCallingConfig")
    mode = str(calling.get("mode") or "AUTO").upper()
    allowed = _field(calling, "allowedFunctionNames")
    if mode in ("ANY", "VALIDATED") and isinstance(allowed, list) and allowed:
        return {"type": "function", "function": {"name": allowed[0]}}
    return _CALLING_MODES.get(mode, "auto")
