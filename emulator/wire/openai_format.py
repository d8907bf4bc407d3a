"""OpenAI's wire format as a front door: chat and text completions, errors, rate headers.

Requests are read by ``openai_request.py``; the bodies and chunks are
``openai_bodies.py``'s and ``stream_events.py``'s. This module binds them to one request
and adds what surrounds them: the bearer key, OpenAI's error types and its
``x-ratelimit-*`` headers.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence

from emulator.content.generation import ChoiceOutput
from emulator.rate_limits import Budget, RateState
from emulator.request_parsing import GenerationRequest
from emulator.wire.api_format import (
    JSON_HEADERS,
    EngineCall,
    ErrorReply,
    Failure,
    Headers,
    Inbound,
    Json,
)
from emulator.wire.openai_bodies import (
    ChunkFrame,
    ResponseMeta,
    chat_body,
    completion_body,
    error_body,
    error_event,
    with_reasoning_tokens,
)
from emulator.wire.openai_request import parse_chat, parse_completion
from emulator.wire.stream_events import StepEvent, UsageSource, chat_events, completion_events

_ERROR_TYPES = {400: "invalid_request_error", 401: "authentication_error", 403: "permission_error"}


class OpenAIFormat:
    """``/v1/chat/completions`` (``chat=True``) or ``/v1/completions``."""

    def __init__(self, *, chat: bool) -> None:
        self.chat = chat

    def refusal(
        self, headers: Mapping[str, str], query: Mapping[str, str], api_key: str | None
    ) -> Failure | None:
        if api_key is None or headers.get("authorization") == f"Bearer {api_key}":
            return None
        return Failure(401, "Incorrect API key provided.", code="invalid_api_key")

    def read(self, inbound: Inbound) -> EngineCall:
        generation = (parse_chat if self.chat else parse_completion)(inbound.body)
        writer = OpenAIAnswer(generation, chat=self.chat)
        return EngineCall(generation, inbound.body, writer, chat=self.chat)

    def error(self, failure: Failure) -> ErrorReply:
        return openai_error(failure)

    def rate_headers(self, state: RateState) -> Headers:
        return openai_rate_headers(state)


class OpenAIAnswer:
    """One chat or text completion's answer, with the options of its request."""

    def __init__(self, generation: GenerationRequest, *, chat: bool) -> None:
        self._generation = generation
        self._chat = chat

    def body(self, choices: Sequence[ChoiceOutput], usage: Json) -> bytes:
        render = chat_body if self._chat else completion_body
        chosen = list(choices)
        counted = with_reasoning_tokens(usage, chosen)
        return render(self._meta(chunk=False), chosen, self._generation.top_logprobs, counted)

    def events(self, choices: Sequence[ChoiceOutput], usage: UsageSource) -> list[StepEvent]:
        sampling = self._generation.sampling
        frame = ChunkFrame(self._meta(chunk=True), sampling.include_usage)
        render = chat_events if self._chat else completion_events
        chosen = list(choices)

        def counted() -> Json:
            return with_reasoning_tokens(usage(), chosen)

        final_usage = counted if sampling.include_usage else None
        return render(frame, chosen, self._generation.top_logprobs, final_usage)

    def error_event(self, message: str) -> bytes:
        return error_event(message)

    def _meta(self, *, chunk: bool) -> ResponseMeta:
        model = self._generation.model
        if self._chat:
            return ResponseMeta.new(
                "chatcmpl", "chat.completion.chunk" if chunk else "chat.completion", model
            )
        return ResponseMeta.new("cmpl", "text_completion", model)


def openai_error(failure: Failure) -> ErrorReply:
    error_type, code = _error_kind(failure.status, failure.code)
    body = error_body(failure.message, error_type, failure.param, code)
    headers = list(JSON_HEADERS)
    if failure.retry_after_s is not None:
        headers.append(retry_after(failure.retry_after_s))
    return ErrorReply(body, headers)


def openai_rate_headers(state: RateState) -> Headers:
    """``x-ratelimit-{limit,remaining,reset}-{requests,tokens}``, as OpenAI sends them."""
    headers: Headers = []
    for kind, budget in (("requests", state.requests), ("tokens", state.tokens)):
        if budget is not None:
            headers.extend(_budget_headers(kind, budget))
    return headers


def retry_after(seconds: float) -> tuple[bytes, bytes]:
    """The ``Retry-After`` header: seconds, fractions kept (to the millisecond)."""
    if seconds > 0:
        seconds = max(0.001, round(seconds, 3))
    return (b"retry-after", f"{seconds:g}".encode())


def duration_text(seconds: float) -> str:
    """OpenAI's reset durations: ``"120ms"``, ``"1.5s"``, ``"6m0s"``."""
    if seconds < 1:
        return f"{max(0, math.ceil(seconds * 1000))}ms"
    minutes, rest = divmod(seconds, 60)
    rest_text = f"{round(rest, 3):g}s"
    return f"{int(minutes)}m{rest_text}" if minutes else rest_text


def _budget_headers(kind: str, budget: Budget) -> Headers:
    return [
        (f"x-ratelimit-limit-{kind}".encode(), str(budget.limit).encode()),
        (f"x-ratelimit-remaining-{kind}".encode(), str(budget.remaining).encode()),
        (f"x-ratelimit-reset-{kind}".encode(), duration_text(budget.reset_s).encode()),
    ]


def _error_kind(status: int, code: str | None) -> tuple[str, str | None]:
    """OpenAI's error ``type`` for a status, and its ``code`` where OpenAI sets one."""
    if status == 429:
        return "requests", code or "rate_limit_exceeded"
    if status >= 500:
        return "server_error", code
    return _ERROR_TYPES.get(status, "invalid_request_error"), code
