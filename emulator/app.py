"""The emulator's ASGI app: OpenAI-compatible endpoints plus /emulator/* controls for tests."""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import asdict
from typing import Any

import orjson
from pydantic import ValidationError
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import Response
from starlette.routing import Route

from emulator.context_window import VisiblePrompt
from emulator.fault_injection import RequestFaults
from emulator.generation import (
    AnswerStyle,
    ChoiceOutput,
    embedding_vector,
    encode_base64_floats,
    generate_choices,
)
from emulator.metrics import prometheus_text
from emulator.needle import needle_answer, needle_key
from emulator.pacing import Pacer
from emulator.request_parsing import (
    BadRequest,
    GenerationRequest,
    parse_chat,
    parse_completion,
    parse_embeddings,
    parse_json_body,
)
from emulator.runtime_state import EmulatorRuntime
from emulator.settings import Faults
from emulator.stream_events import StepEvent, chat_events, completion_events
from emulator.text import CHARS_PER_TOKEN
from emulator.timed_response import TimedResponse
from emulator.timeline import Timeline, plan_timeline
from emulator.wire_format import (
    ChunkFrame,
    Payload,
    ResponseMeta,
    chat_body,
    completion_body,
    embeddings_body,
    error_body,
    error_event,
)

_JSON = b"application/json"
_SSE_HEADERS = [(b"content-type", b"text/event-stream"), (b"cache-control", b"no-cache")]
_PROMETHEUS = "text/plain; version=0.0.4"
_ERROR_TYPES = {400: "invalid_request_error", 401: "authentication_error", 403: "permission_error"}

Parser = Callable[[dict[str, Any]], GenerationRequest]


def create_app(runtime: EmulatorRuntime) -> Starlette:
    """An ASGI app serving ``runtime``; the runtime is also at ``app.state.emulator``."""
    endpoints = _Endpoints(runtime)
    routes = [
        Route("/health", endpoints.health, methods=["GET"]),
        Route("/v1/models", endpoints.models, methods=["GET"]),
        Route("/v1/chat/completions", endpoints.chat_completions, methods=["POST"]),
        Route("/v1/completions", endpoints.completions, methods=["POST"]),
        Route("/v1/embeddings", endpoints.embeddings, methods=["POST"]),
        Route("/emulator/faults", endpoints.get_faults, methods=["GET"]),
        Route("/emulator/faults", endpoints.put_faults, methods=["PUT"]),
        Route("/emulator/stats", endpoints.stats, methods=["GET"]),
        Route("/metrics", endpoints.metrics, methods=["GET"]),
    ]
    app = Starlette(routes=routes)
    app.state.emulator = runtime
    return app


class _Endpoints:
    def __init__(self, runtime: EmulatorRuntime) -> None:
        self._runtime = runtime
        self._models = frozenset(runtime.settings.models)
        created = int(time.time())
        listing = [
            {"id": name, "object": "model", "created": created, "owned_by": "switchyard-emulator"}
            for name in runtime.settings.models
        ]
        self._models_body = orjson.dumps({"object": "list", "data": listing})

    async def health(self, request: Request) -> Response:
        return Response(b'{"status":"ok"}', media_type="application/json")

    async def models(self, request: Request) -> Response:
        return Response(self._models_body, media_type="application/json")

    async def chat_completions(self, request: Request) -> TimedResponse:
        return await self._generate(request, parse_chat, chat=True)

    async def completions(self, request: Request) -> TimedResponse:
        return await self._generate(request, parse_completion, chat=False)

    async def embeddings(self, request: Request) -> TimedResponse:
        failure = self._injected_failure()
        if failure is not None:
            return failure
        try:
            parsed = parse_embeddings(parse_json_body(await request.body()))
            self._check_model(parsed.model)
        except BadRequest as exc:
            return self._error(exc.status, exc.message, exc.param, exc.code)
        dimensions = parsed.dimensions or self._runtime.settings.embedding_dim
        vectors: list[Any] = [embedding_vector(text, dimensions) for text in parsed.inputs]
        if parsed.base64:
            vectors = [encode_base64_floats(vector) for vector in vectors]
        body = embeddings_body(parsed.model, vectors, parsed.prompt_tokens)
        due = self._runtime.timing.first_token_delay_s(parsed.prompt_tokens)
        return self._json(body, due, spike_s=self._latency_spike_s())

    async def get_faults(self, request: Request) -> Response:
        return Response(self._runtime.faults.model_dump_json(), media_type="application/json")

    async def put_faults(self, request: Request) -> Response:
        try:
            self._runtime.faults = Faults.model_validate_json(await request.body())
        except ValidationError as exc:
            body = error_body(str(exc), "invalid_request_error", None, None)
            return Response(body, status_code=400, media_type="application/json")
        return await self.get_faults(request)

    async def stats(self, request: Request) -> Response:
        runtime = self._runtime
        injected = runtime.injector.counters.as_stats()
        numbers = {**asdict(runtime.stats), **runtime.snapshot().as_stats(), **injected}
        return Response(orjson.dumps(numbers), media_type="application/json")

    async def metrics(self, request: Request) -> Response:
        return Response(prometheus_text(self._runtime.snapshot()), media_type=_PROMETHEUS)

    async def _generate(self, request: Request, parse: Parser, *, chat: bool) -> TimedResponse:
        failure = self._injected_failure()
        if failure is not None:
            return failure
        runtime = self._runtime
        try:
            body = parse_json_body(await request.body())
            generation = parse(body)
            self._check_model(generation.model)
            prompt = _visible_prompt(runtime, body, generation, chat=chat)
            request_faults = runtime.injector.roll(generation)
            choices = generate_choices(generation, _style(prompt, request_faults))
            timeline = plan_timeline(runtime, prompt, choices)
        except BadRequest as exc:
            return self._error(exc.status, exc.message, exc.param, exc.code)
        spike_s = self._latency_spike_s()
        if generation.sampling.stream:
            return self._stream(generation, choices, timeline, request_faults, spike_s, chat=chat)
        meta = _meta(generation.model, chat=chat, chunk=False)
        render = chat_body if chat else completion_body
        top_logprobs, usage_of = generation.top_logprobs, timeline.usage

        def rendered() -> bytes:
            return render(meta, choices, top_logprobs, usage_of())

        return self._json(rendered, timeline.last_offset(choices), timeline.pacer, spike_s)

    def _stream(
        self,
        generation: GenerationRequest,
        choices: list[ChoiceOutput],
        timeline: Timeline,
        faults: RequestFaults,
        spike_s: float,
        *,
        chat: bool,
    ) -> TimedResponse:
        sampling = generation.sampling
        frame = ChunkFrame(_meta(generation.model, chat=chat, chunk=True), sampling.include_usage)
        final_usage = timeline.usage if sampling.include_usage else None
        render = chat_events if chat else completion_events
        events = render(frame, choices, generation.top_logprobs, final_usage)
        events, complete, ok = self._stream_faults(events, faults.cut_after_chunks)
        return TimedResponse(
            status=200,
            headers=_SSE_HEADERS,
            events=[(timeline.offset(index), data) for index, data in events],
            stats=self._runtime.stats,
            stall_s=self._runtime.faults.stall_before_first_byte_s + spike_s,
            headers_first=True,
            complete=complete,
            ok=ok,
            pacer=timeline.pacer,
        )

    def _stream_faults(
        self, events: list[StepEvent], cut_after_chunks: int | None
    ) -> tuple[list[StepEvent], bool, bool]:
        """Apply cut / error-event faults: (events, body complete, request ok)."""
        faults = self._runtime.faults
        # The last event is [DONE]; a faulty stream never reaches it.
        chunks = len(events) - 1
        if cut_after_chunks is not None:
            return events[: min(cut_after_chunks, chunks)], False, False
        if faults.error_event_after_chunks is not None:
            kept = events[: min(faults.error_event_after_chunks, chunks)]
            step = kept[-1][0] if kept else 0
            return [*kept, (step, error_event("Emulated failure mid-stream."))], True, False
        return events, True, True

    def _check_model(self, model: str) -> None:
        if model not in self._models:
            message = f"The model `{model}` does not exist or you do not have access to it."
            raise BadRequest(message, "model", status=404, code="model_not_found")

    def _injected_failure(self) -> TimedResponse | None:
        status = self._runtime.take_failure()
        if status is None:
            return None
        retry_after = self._runtime.faults.retry_after_s
        return self._error(status, f"Emulated failure ({status}).", None, None, retry_after)

    def _latency_spike_s(self) -> float:
        return self._runtime.injector.latency_spike_s(self._runtime.settings.time_scale)

    def _json(
        self, body: Payload, due: float, pacer: Pacer | None = None, spike_s: float = 0.0
    ) -> TimedResponse:
        # TimedResponse adds content-length: the body may be rendered only when due.
        return TimedResponse(
            status=200,
            headers=[(b"content-type", _JSON)],
            events=[(due, body)],
            stats=self._runtime.stats,
            stall_s=self._runtime.faults.stall_before_first_byte_s + spike_s,
            pacer=pacer,
        )

    def _error(
        self,
        status: int,
        message: str,
        param: str | None,
        code: str | None,
        retry_after_s: float | None = None,
    ) -> TimedResponse:
        error_type, code = _error_kind(status, code)
        body = error_body(message, error_type, param, code)
        headers = [(b"content-type", _JSON)]
        if retry_after_s is not None:
            headers.append((b"retry-after", f"{retry_after_s:g}".encode()))
        return TimedResponse(
            status=status,
            headers=headers,
            events=[(0.0, body)],
            stats=self._runtime.stats,
            stall_s=self._runtime.faults.stall_before_first_byte_s,
            ok=False,
        )


def _visible_prompt(
    runtime: EmulatorRuntime, body: dict[str, Any], generation: GenerationRequest, *, chat: bool
) -> VisiblePrompt:
    # Truncation measures tokens as the cost model in use counts them.
    per_token = runtime.settings.bytes_per_token if runtime.engine else CHARS_PER_TOKEN
    keep = runtime.faults.truncate_context_tokens
    return VisiblePrompt(body, generation, chat=chat, keep_tokens=keep, bytes_per_token=per_token)


def _style(prompt: VisiblePrompt, faults: RequestFaults) -> AnswerStyle:
    key = needle_key(prompt.body) if prompt.chat else None
    answer = None if key is None else needle_answer(key, prompt.text())
    return AnswerStyle(answer, faults.loop, faults.substitute, faults.tool_fault)


def _meta(model: str, *, chat: bool, chunk: bool) -> ResponseMeta:
    if chat:
        return ResponseMeta.new(
            "chatcmpl", "chat.completion.chunk" if chunk else "chat.completion", model
        )
    return ResponseMeta.new("cmpl", "text_completion", model)


def _error_kind(status: int, code: str | None) -> tuple[str, str | None]:
    """OpenAI's error ``type`` for a status, and its ``code`` where OpenAI sets one."""
    if status == 429:
        return "requests", code or "rate_limit_exceeded"
    if status >= 500:
        return "server_error", code
    return _ERROR_TYPES.get(status, "invalid_request_error"), code
