"""Google's Gemini API as a front door: ``models/{model}:generateContent``, its stream
(``:streamGenerateContent?alt=sse``), its model list and its errors.

A request, checked against ``gemini_request.py``'s models (a refusal names its field in a
``google.rpc.BadRequest`` detail too), becomes the engine's chat form (``chat_form.py``):
``systemInstruction``, then
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

import orjson

from emulator.content.generation import ChoiceOutput
from emulator.rate_limits import RateState
from emulator.request_parsing import DEFAULT_CHAT_MAX_TOKENS, BadRequest
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
from emulator.wire.gemini_request import (
    OUTPUT_TOKEN_LIMIT,
    Content,
    FunctionDeclaration,
    GenerateContentRequest,
    GenerationConfig,
    Part,
    ThinkingConfig,
    ToolConfig,
)
from emulator.wire.openai_request import parse_chat
from emulator.wire.stream_events import StepEvent, UsageSource
from emulator.wire.validation import gemini_bad_request, validated

RETRY_INFO = "type.googleapis.com/google.rpc.RetryInfo"
BAD_REQUEST_INFO = "type.googleapis.com/google.rpc.BadRequest"
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
        request = validated(GenerateContentRequest, inbound.body, gemini_bad_request)
        model = inbound.path["model"]
        config = request.generation_config or GenerationConfig()
        max_tokens = config.max_output_tokens or DEFAULT_CHAT_MAX_TOKENS
        thinking, shown = _thinking(config.thinking_config, max_tokens)
        system = request.system_instruction
        prompt: Json = {
            "model": model,
            "messages": chat_messages(
                "".join(_texts(system.parts)) if system else "",
                map(_chat_turn, request.contents),
            ),
            "max_tokens": max_tokens - thinking,
            "n": config.candidate_count or 1,
            "seed": config.seed,
            "stop": config.stop_sequences,
            "stream": self.streaming,
            **_response_format(config),
            **_chat_tools(request),
        }
        generation = replace(parse_chat(prompt), thinking_tokens=thinking)
        return EngineCall(generation, prompt, GeminiAnswer(model, show_thoughts=shown))

    def error(self, failure: Failure) -> ErrorReply:
        return ErrorReply(orjson.dumps({"error": error_object(failure)}), list(JSON_HEADERS))

    def rate_headers(self, state: RateState) -> Headers:
        # Gemini reports no budgets in headers; a refusal says when to retry in its body.
        return []


def error_object(failure: Failure) -> Json:
    """``{code, message, status}``, with a RetryInfo detail when a wait is known and a
    BadRequest detail naming the field a refused request got wrong."""
    status = failure.status
    name = _STATUS_NAMES.get(status, "INTERNAL" if status >= 500 else "FAILED_PRECONDITION")
    error: Json = {"code": status, "message": failure.message, "status": name}
    details: list[Json] = []
    if failure.retry_after_s is not None:
        delay = f"{round(failure.retry_after_s, 3):g}s"
        details.append({"@type": RETRY_INFO, "retryDelay": delay})
    if status == 400 and failure.param is not None:
        violation = {"field": failure.param, "description": failure.message}
        details.append({"@type": BAD_REQUEST_INFO, "fieldViolations": [violation]})
    if details:
        error["details"] = details
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


def _thinking(config: ThinkingConfig | None, max_tokens: int) -> tuple[int, bool]:
    """Thinking tokens before the answer, and whether thought parts are shown."""
    if config is None:
        return 0, False
    budget = config.thinking_budget
    if budget is None and config.thinking_level is not None:
        budget = _THINKING_LEVELS.get(config.thinking_level.upper())
    if budget == -1:  # dynamic: the model decides; the emulator takes the most it may
        budget = max_tokens
    tokens = max(0, min(budget or 0, max_tokens // 2))
    return tokens, bool(config.include_thoughts) and tokens > 0


def _response_format(config: GenerationConfig) -> Json:
    if config.response_mime_type != "application/json":
        return {}
    schema = config.response_json_schema or config.response_schema
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


def _chat_turn(content: Content) -> list[Json]:
    """One content as chat messages: function responses, then its text and calls."""
    role = "assistant" if content.role == "model" else "user"
    parts = content.parts
    results = [
        orjson.dumps(part.function_response.model_dump(exclude_none=True)).decode()
        for part in parts
        if part.function_response is not None
    ]
    calls = [
        tool_call(f"call_{index}", part.function_call.name, part.function_call.args)
        for index, part in enumerate(parts)
        if part.function_call is not None
    ]
    return chat_turn(role, results, _texts(parts), calls)


def _texts(parts: list[Part]) -> list[str]:
    """The text of parts that are not thoughts (earlier turns' thoughts are not replayed)."""
    return [part.text for part in parts if part.text is not None and not part.thought]


def _chat_tools(request: GenerateContentRequest) -> Json:
    declarations = [
        declaration
        for tool in request.tools or ()
        for declaration in tool.function_declarations or ()
    ]
    if not declarations:
        return {}
    functions = [function_tool(d.name, _parameters(d)) for d in declarations]
    return {"tools": functions, "tool_choice": _tool_choice(request.tool_config)}


def _parameters(declaration: FunctionDeclaration) -> object:
    schema = declaration.parameters_json_schema or _json_schema(declaration.parameters)
    return schema or {"type": "object"}


def _tool_choice(tool_config: ToolConfig | None) -> object:
    calling = tool_config.function_calling_config if tool_config is not None else None
    if calling is None:
        return "auto"
    mode = (calling.mode or "AUTO").upper()
    allowed = calling.allowed_function_names
    if mode in ("ANY", "VALIDATED") and allowed:
        return {"type": "function", "function": {"name": allowed[0]}}
    return _CALLING_MODES.get(mode, "auto")
