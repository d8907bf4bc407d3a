"""One request's spans, made only when tracing is on (this module imports the SDK).

A `RequestTrace` opens the SERVER span when the proxy has the body (a child of the
client's `traceparent`, when it sent one). Each exchange of the request with the backends
is a `TraceLeg`: a plain request has one, a cascade one per tier and one per judge call,
each tagged with its tier (`switchyard.cascade.*`). A leg records its routing decision as
an INTERNAL child with the decision's own duration and opens a CLIENT child per upstream
attempt, whose context the backend receives as its `traceparent`. A failed attempt's span
ends at once with its error; the committed one ends when its leg's `Exchange` does (a
stream's when the stream does), with the GenAI semantic conventions' attributes
(`gen_ai.*`: usage, finish reasons) and the gateway's own (`switchyard.*`: the answer's
cost, the cache hit, a cascade attempt's outcome). The server span ends with the leg whose
answer, or failure, the client gets: with that answer's attributes and what the whole
request cost.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Callable, Mapping
from typing import TYPE_CHECKING

from opentelemetry.context import Context
from opentelemetry.trace import SpanKind, Status, StatusCode, Tracer, set_span_in_context
from opentelemetry.trace.propagation.tracecontext import TraceContextTextMapPropagator

from gateway.tracing.finish_reasons import FinishReasonTap, finish_reasons

if TYPE_CHECKING:
    from opentelemetry.sdk.trace import TracerProvider
    from opentelemetry.trace import Span

    from gateway.routing.decisions import DecisionRecord
    from providers.usage import Usage

_PROPAGATOR = TraceContextTextMapPropagator()

OPERATIONS = {"chat.completions": "chat", "completions": "text_completion"}
"""The GenAI operation of each endpoint the gateway routes (`embeddings` is its own)."""
PASSED_ON = frozenset({"escalated", "judge"})
"""A cascade attempt's outcomes after which the request goes on (its leg is not the last)."""

Attributes = dict[str, str | int | float | bool | list[str]]
Cost = Callable[[str, str, "Usage"], float]
"""What an answer cost in USD: (backend, upstream model, usage), at the telemetry's prices."""


class Tracing:
    """The gateway's tracer provider (its own, not the global one) and its tracer."""

    def __init__(self, provider: TracerProvider, cost: Cost | None = None) -> None:
        self._provider = provider
        self._tracer = provider.get_tracer("switchyard")
        self._cost = cost

    def request(
        self, path: str, endpoint: str, headers: Mapping[str, str], kinds: Mapping[str, str]
    ) -> TraceLeg:
        """A request's trace, its SERVER span started, and its first leg; `kinds`: each
        backend's kind."""
        parent = _PROPAGATOR.extract(headers)
        span = self._tracer.start_span(
            f"POST {path}",
            context=parent,
            kind=SpanKind.SERVER,
            attributes={"http.request.method": "POST", "url.path": path, "http.route": path},
        )
        operation = OPERATIONS.get(endpoint, endpoint)
        return RequestTrace(self._tracer, span, operation, kinds, self._cost).leg()

    async def flush(self) -> None:
        """Export every span ended so far (the SDK blocks: on a thread)."""
        await asyncio.to_thread(self._provider.force_flush)

    async def shutdown(self) -> None:
        """Export what is queued and stop (the SDK blocks: on a thread)."""
        await asyncio.to_thread(self._provider.shutdown)


class RequestTrace:
    """One request's SERVER span and what its legs add up to (see the module docstring)."""

    __slots__ = (
        "_context",
        "_cost",
        "_cost_usd",
        "_ended",
        "_span",
        "_tracer",
        "kinds",
        "operation",
        "recording",
    )

    def __init__(
        self,
        tracer: Tracer,
        span: Span,
        operation: str,
        kinds: Mapping[str, str],
        cost: Cost | None,
    ) -> None:
        self._tracer, self._span, self.operation, self.kinds = tracer, span, operation, kinds
        self._context: Context = set_span_in_context(span)
        self._cost = cost
        self._cost_usd: float | None = None
        self._ended = False
        self.recording = span.is_recording()
        """Sampled: the spans take attributes (else only the trace's context travels)."""

    def leg(self, attributes: Mapping[str, str | int] | None = None) -> TraceLeg:
        """A new exchange of the request with the backends; `attributes` tag its spans (a
        cascade's tier)."""
        return TraceLeg(self, dict(attributes or {}))

    def start(
        self, name: str, kind: SpanKind, attributes: Attributes, start_time: int | None = None
    ) -> Span:
        """A child of the server span."""
        return self._tracer.start_span(
            name, context=self._context, kind=kind, attributes=attributes, start_time=start_time
        )

    def tag(self, attributes: Mapping[str, str]) -> None:
        self._span.set_attributes(attributes)

    def priced(self, backend: str, model: str, usage: Usage) -> float | None:
        """An answer's cost, added to the request's."""
        if self._cost is None:
            return None
        cost = self._cost(backend, model, usage)
        self._cost_usd = (self._cost_usd or 0.0) + cost
        return cost

    def finish(self, status: int, error: str | None, attributes: Attributes | None = None) -> None:
        """The server span ends, once: with the client's answer's attributes and, when any
        answer was priced, what all the request's answers cost (a cascade's every tier)."""
        if self._ended:
            return
        self._ended = True
        if self.recording:
            span = self._span
            span.set_attributes({**(attributes or {}), "http.response.status_code": status})
            if self._cost_usd is not None:
                span.set_attribute("switchyard.cost_usd", self._cost_usd)
            if error is not None:
                span.set_attribute("error.type", error)
            if status >= 500:  # a 4xx is the client's error, not the server span's (HTTP semconv)
                _fail(span, error or str(status))
        self._span.end()


class TraceLeg:
    """One exchange's spans (see the module docstring); the dispatcher's `AttemptTracer`."""

    __slots__ = ("_answer", "_attributes", "_ended", "_reasons", "_served", "_tap", "request")

    def __init__(self, request: RequestTrace, attributes: Attributes) -> None:
        self.request, self._attributes = request, attributes
        self._served: UpstreamSpan | None = None
        self._reasons: list[str] | None = None
        self._tap: FinishReasonTap | None = None
        self._answer: Attributes = {}
        self._ended = False

    def decided(self, record: DecisionRecord) -> None:
        """The routing decision, as a span of the decision's own duration ending now."""
        decision, end = record.decision, time.time_ns()
        chosen = decision.chosen
        attributes: Attributes = {
            **self._attributes,
            "switchyard.route": decision.route,
            "switchyard.decision_id": decision.id,
            "switchyard.policy": decision.picker,
            "switchyard.policy_reason": decision.picker_reason,
            "switchyard.candidates": len(decision.order),
        }
        if chosen is not None:
            attributes["switchyard.backend"] = chosen
            attributes["switchyard.cache_predicted_tokens"] = record.work.cached_tokens.get(
                chosen, 0
            )
        span = self.request.start(
            "switchyard.route",
            SpanKind.INTERNAL,
            attributes,
            start_time=end - int(decision.total_us * 1000),
        )
        span.end(end_time=end)
        route = {"switchyard.route": decision.route, "switchyard.decision_id": decision.id}
        self.request.tag(route)

    def attempt(self, backend: str, route: str, model: str) -> UpstreamSpan:
        """A CLIENT span for one upstream attempt; its context goes to the backend."""
        request = self.request
        span = request.start(
            f"{request.operation} {model}",
            SpanKind.CLIENT,
            {
                **self._attributes,
                "gen_ai.operation.name": request.operation,
                "gen_ai.provider.name": request.kinds.get(backend, "openai"),
                "gen_ai.request.model": model,
                "switchyard.backend": backend,
                "switchyard.route": route,
            },
        )
        headers: dict[str, str] = {}
        _PROPAGATOR.inject(headers, context=set_span_in_context(span))
        return UpstreamSpan(self, span, headers, backend, model)

    def read_answer(self, body: bytes) -> None:
        """A whole answer's body: its finish reasons, when the trace is sampled."""
        if self.request.recording:
            self._reasons = finish_reasons(body)

    def stream_tap(self) -> FinishReasonTap | None:
        """What reads a stream's finish reasons as it is relayed (None: not sampled)."""
        if self.request.recording:
            self._tap = FinishReasonTap()
        return self._tap

    def finish(
        self,
        status: int,
        error: str | None,
        usage: Usage | None,
        served_model: str | None,
        cascade_outcome: str | None = None,
    ) -> None:
        """The leg's exchange ended: its answering attempt's span ends with the answer's
        attributes; so does the server span unless the request goes on (a cascade's
        escalated tier, its judge's call). Once per leg; the server span once."""
        if not self._ended:
            self._ended = True
            served, self._served = self._served, None
            answer = self._answered(usage, served_model, served, cascade_outcome)
            if served is not None:
                served.finish(answer, error)
            self._answer = answer
        if cascade_outcome not in PASSED_ON:
            self.request.finish(status, error, {**self._attributes, **self._answer})

    def _answered(
        self,
        usage: Usage | None,
        served_model: str | None,
        served: UpstreamSpan | None,
        cascade_outcome: str | None,
    ) -> Attributes:
        if not self.request.recording:
            return {}
        attributes = _usage_attributes(usage)
        if served_model:
            attributes["gen_ai.response.model"] = served_model
        reasons = self._tap.reasons if self._tap is not None else self._reasons
        if reasons:
            attributes["gen_ai.response.finish_reasons"] = reasons
        if served is not None and usage is not None:
            cost = self.request.priced(served.backend, served_model or served.model, usage)
            if cost is not None:
                attributes["switchyard.cost_usd"] = cost
        if cascade_outcome is not None:
            attributes["switchyard.cascade.outcome"] = cascade_outcome
        return attributes

    def _committed(self, span: UpstreamSpan) -> None:
        self._served = span


class UpstreamSpan:
    """One attempt's CLIENT span (`AttemptSpan`)."""

    __slots__ = ("_leg", "_span", "backend", "headers", "model")

    def __init__(
        self, leg: TraceLeg, span: Span, headers: dict[str, str], backend: str, model: str
    ) -> None:
        self._leg, self._span, self.headers = leg, span, headers
        self.backend, self.model = backend, model

    def ended(self, outcome: str) -> None:
        self._span.set_attribute("switchyard.outcome", outcome)
        if outcome == "ok":
            self._leg._committed(self)
            return
        _fail(self._span, outcome)
        self._span.end()

    def finish(self, attributes: Attributes, error: str | None) -> None:
        self._span.set_attributes(attributes)
        if error is not None:
            self._span.set_attribute("switchyard.outcome", error)
            _fail(self._span, error)
        self._span.end()


def _usage_attributes(usage: Usage | None) -> Attributes:
    """The GenAI usage attributes (names as the semantic conventions' registry has them);
    cache reads and writes only as the backend reported them."""
    if usage is None:
        return {}
    attributes: Attributes = {
        "gen_ai.usage.input_tokens": usage.prompt_tokens,
        "gen_ai.usage.output_tokens": usage.completion_tokens,
        "switchyard.cache_hit": bool(usage.cached_tokens),
    }
    if usage.cached_tokens is not None:
        attributes["gen_ai.usage.cache_read.input_tokens"] = usage.cached_tokens
    if usage.cache_write_tokens:
        attributes["gen_ai.usage.cache_creation.input_tokens"] = usage.cache_write_tokens
    if usage.reasoning_tokens:
        attributes["gen_ai.usage.reasoning.output_tokens"] = usage.reasoning_tokens
    return attributes


def _fail(span: Span, code: str) -> None:
    span.set_attribute("error.type", code)
    span.set_status(Status(StatusCode.ERROR, code))
