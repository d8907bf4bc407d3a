"""One inference request through the engine, whatever its wire format, in one order.

Refuse (key, required headers), fail (injected failures), read (the format's request in
the engine's terms), check the model, admit (rate limits), then generate, time and write
the answer in the request's format, whole or streamed, with the stream faults applied.
"""

from __future__ import annotations

from dataclasses import replace
from typing import Any

from starlette.requests import Request

from emulator.content.generation import (
    AnswerStyle,
    ChoiceOutput,
    embedding_vector,
    encode_base64_floats,
    generate_choices,
)
from emulator.content.needle import needle_answer, needle_key
from emulator.content.oracle import oracle_answer
from emulator.content.text import CHARS_PER_TOKEN
from emulator.engine.context_window import VisiblePrompt
from emulator.engine.pacing import Pacer
from emulator.engine.runtime_state import EmulatorRuntime
from emulator.fault_injection import RequestFaults
from emulator.rate_limits import RateState
from emulator.request_parsing import BadRequest, parse_json_body
from emulator.timed_response import TimedResponse
from emulator.timeline import Timeline, plan_timeline
from emulator.wire.api_format import (
    JSON_HEADERS,
    SSE_HEADERS,
    ApiFormat,
    EngineCall,
    Failure,
    Headers,
    Inbound,
)
from emulator.wire.openai_bodies import Payload, embeddings_body
from emulator.wire.openai_format import OpenAIFormat
from emulator.wire.openai_request import parse_embeddings
from emulator.wire.stream_events import StepEvent

_STREAM_ERROR = "Emulated failure mid-stream."


class InferencePath:
    """Serves the inference endpoints of one engine; every format shares its runtime."""

    def __init__(self, runtime: EmulatorRuntime) -> None:
        self._runtime = runtime
        self._models = frozenset(runtime.settings.models)
        self._embeddings_format = OpenAIFormat(chat=True)

    async def generate(self, request: Request, api: ApiFormat) -> TimedResponse:
        """A chat, completion, message or content generation in ``api``'s format."""
        refused = self._refused(request, api)
        if refused is not None:
            return refused
        runtime = self._runtime
        rate = runtime.limiter.peek()
        try:
            body = parse_json_body(await request.body())
            inbound = Inbound(body, request.path_params, request.query_params, request.headers)
            call = api.read(inbound)
            self.check_model(call.generation.model)
            rate = runtime.limiter.admit(call.requested_tokens)
            if rate.refused:
                return self._error(api, _rate_limited(rate), rate)
            _record_client(runtime, call)
            prompt = _visible_prompt(runtime, call)
            faults = runtime.injector.roll(call.generation)
            style = _style(prompt, faults, oracle=runtime.settings.answers == "oracle")
            choices = generate_choices(call.generation, runtime.lengths, style)
            timeline = plan_timeline(runtime, prompt, choices, call.cache_pieces)
        except BadRequest as exc:
            return self._error(api, Failure.of(exc), rate)
        spike_s = self._latency_spike_s()
        headers = api.rate_headers(rate)
        if call.generation.sampling.stream:
            return self._stream(call, choices, timeline, faults, spike_s, headers)
        writer, usage = call.writer, timeline.usage
        malformed = self._runtime.faults.malformed_body

        def rendered() -> bytes:
            body = writer.body(choices, usage())
            return body[: len(body) // 2] if malformed else body

        due = timeline.last_offset(choices)
        return self._json(rendered, due, headers, timeline.pacer, spike_s)

    async def embeddings(self, request: Request) -> TimedResponse:
        """OpenAI's ``/v1/embeddings``: linear timing, no generation."""
        api = self._embeddings_format
        refused = self._refused(request, api)
        if refused is not None:
            return refused
        rate = self._runtime.limiter.peek()
        try:
            parsed = parse_embeddings(parse_json_body(await request.body()))
            self.check_model(parsed.model)
            rate = self._runtime.limiter.admit(parsed.prompt_tokens)
            if rate.refused:
                return self._error(api, _rate_limited(rate), rate)
        except BadRequest as exc:
            return self._error(api, Failure.of(exc), rate)
        dimensions = parsed.dimensions or self._runtime.settings.embedding_dim
        vectors: list[Any] = [embedding_vector(text, dimensions) for text in parsed.inputs]
        if parsed.base64:
            vectors = [encode_base64_floats(vector) for vector in vectors]
        body = embeddings_body(parsed.model, vectors, parsed.prompt_tokens)
        due = self._runtime.timing.first_token_delay_s(parsed.prompt_tokens)
        spike_s = self._latency_spike_s()
        return self._json(body, due, api.rate_headers(rate), spike_s=spike_s)

    def refusal(self, request: Request, api: ApiFormat) -> Failure | None:
        """Why ``api`` refuses this request before reading it (key, headers), if it does."""
        return api.refusal(request.headers, request.query_params, self._runtime.settings.api_key)

    def check_model(self, model: str) -> None:
        if model not in self._models:
            message = f"The model `{model}` does not exist or you do not have access to it."
            raise BadRequest(message, "model", status=404, code="model_not_found")

    def _refused(self, request: Request, api: ApiFormat) -> TimedResponse | None:
        """The refusal or the injected failure this request gets before it is read."""
        refusal = self.refusal(request, api)
        if refusal is not None:
            return self._error(api, self._echoing(refusal, request), None)
        status = self._runtime.take_failure()
        if status is None:
            return None
        retry_after_s = self._runtime.faults.retry_after_s
        failure = Failure(status, f"Emulated failure ({status}).", retry_after_s=retry_after_s)
        return self._error(api, self._echoing(failure, request), self._runtime.limiter.peek())

    def _echoing(self, failure: Failure, request: Request) -> Failure:
        """With `echo_request_headers`, the failure quotes every header it was sent."""
        if not self._runtime.faults.echo_request_headers:
            return failure
        quoted = "; ".join(f"{name}: {value}" for name, value in request.headers.items())
        return replace(failure, message=f"{failure.message} Request headers: {quoted}")

    def _stream(
        self,
        call: EngineCall,
        choices: list[ChoiceOutput],
        timeline: Timeline,
        faults: RequestFaults,
        spike_s: float,
        headers: Headers,
    ) -> TimedResponse:
        events = call.writer.events(choices, timeline.usage)
        events, complete, ok = self._stream_faults(events, call, faults.cut_after_chunks)
        settings = self._runtime.faults
        pause = None
        if settings.stall_mid_stream_after_chunks is not None:
            pause = (settings.stall_mid_stream_after_chunks, settings.stall_mid_stream_s)
        return TimedResponse(
            status=200,
            headers=SSE_HEADERS + headers,
            events=[(timeline.offset(index), data) for index, data in events],
            stats=self._runtime.stats,
            stall_s=settings.stall_before_first_byte_s + spike_s,
            headers_first=True,
            complete=complete,
            ok=ok,
            pacer=timeline.pacer,
            pause=pause,
        )

    def _stream_faults(
        self, events: list[StepEvent], call: EngineCall, cut_after_chunks: int | None
    ) -> tuple[list[StepEvent], bool, bool]:
        """Apply cut / error-event / missing-end faults: (events, body complete, request ok)."""
        error_after = self._runtime.faults.error_event_after_chunks
        # The last event ends the stream; a faulty stream never reaches it.
        chunks = len(events) - 1
        if cut_after_chunks is not None:
            return events[: min(cut_after_chunks, chunks)], False, False
        if self._runtime.faults.omit_done:
            return events[:chunks], True, False
        if error_after is not None:
            kept = events[: min(error_after, chunks)]
            step = kept[-1][0] if kept else 0
            return [*kept, (step, call.writer.error_event(_STREAM_ERROR))], True, False
        return events, True, True

    def _latency_spike_s(self) -> float:
        return self._runtime.injector.latency_spike_s(self._runtime.settings.time_scale)

    def _json(
        self,
        body: Payload,
        due: float,
        headers: Headers,
        pacer: Pacer | None = None,
        spike_s: float = 0.0,
    ) -> TimedResponse:
        # TimedResponse adds content-length: the body may be rendered only when due.
        return TimedResponse(
            status=200,
            headers=JSON_HEADERS + headers,
            events=[(due, body)],
            stats=self._runtime.stats,
            stall_s=self._runtime.faults.stall_before_first_byte_s + spike_s,
            pacer=pacer,
        )

    def _error(self, api: ApiFormat, failure: Failure, rate: RateState | None) -> TimedResponse:
        reply = api.error(failure)
        headers = reply.headers if rate is None else reply.headers + api.rate_headers(rate)
        return TimedResponse(
            status=failure.status,
            headers=headers,
            events=[(0.0, reply.body)],
            stats=self._runtime.stats,
            stall_s=self._runtime.faults.stall_before_first_byte_s,
            ok=False,
        )


def _record_client(runtime: EmulatorRuntime, call: EngineCall) -> None:
    """Count the client's API version and betas: a request that reached the engine."""
    client = call.client
    if client is not None:
        runtime.stats.saw_client(client.version, client.betas)


def _rate_limited(rate: RateState) -> Failure:
    which = "requests" if rate.requests is not None and rate.requests.remaining < 1 else "tokens"
    message = f"Rate limit reached for {which} per minute; retry after the wait given."
    return Failure(429, message, code="rate_limit_exceeded", retry_after_s=rate.retry_after_s)


def _visible_prompt(runtime: EmulatorRuntime, call: EngineCall) -> VisiblePrompt:
    # Truncation measures tokens as the cost model in use counts them.
    per_token = runtime.settings.bytes_per_token if runtime.engine else CHARS_PER_TOKEN
    keep = runtime.faults.truncate_context_tokens
    return VisiblePrompt(
        call.prompt, call.generation, chat=call.chat, keep_tokens=keep, bytes_per_token=per_token
    )


def _style(prompt: VisiblePrompt, faults: RequestFaults, *, oracle: bool) -> AnswerStyle:
    key = needle_key(prompt.body) if prompt.chat else None
    answer = None if key is None else needle_answer(key, prompt.text())
    style = AnswerStyle(answer, faults.loop, faults.substitute, faults.tool_fault)
    if not oracle or not prompt.chat or answer is not None:
        return style
    known = oracle_answer(prompt.body, prompt.generation)
    return replace(style, answer=known.text, call=known.call)
