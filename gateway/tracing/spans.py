"""One request's spans, made only when tracing is on (this module imports the SDK).

A `RequestTrace` opens the SERVER span when the proxy has the body (a child of the
client's `traceparent`, when it sent one), records the routing decision as an INTERNAL
child with the decision's own duration, and opens a CLIENT child per upstream attempt,
whose context the backend receives as its `traceparent`. A failed attempt's span ends at
once with its error; the committed one, and the server span, end when the request's
`Exchange` ends (a stream's when the stream does), with the GenAI semantic conventions'
attributes (`gen_ai.*`) and the gateway's own (`switchyard.*`).
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Mapping
from typing import TYPE_CHECKING

from opentelemetry.context import Context
from opentelemetry.trace import SpanKind, Status, StatusCode, Tracer, set_span_in_context
from opentelemetry.trace.propagation.tracecontext import TraceContextTextMapPropagator

if TYPE_CHECKING:
    from opentelemetry.sdk.trace import TracerProvider
    from opentelemetry.trace import Span

    from gateway.routing.decisions import DecisionRecord
    from providers.usage import Usage

_PROPAGATOR = TraceContextTextMapPropagator()

OPERATIONS = {"chat.completions": "chat", "completions": "text_completion"}
"""The GenAI operation of each endpoint the gateway routes (`embeddings` is its own)."""


class Tracing:
    """The gateway's tracer provider (its own, not the global one) and its tracer."""

    def __init__(self, provider: TracerProvider) -> None:
        self._provider = provider
        self._tracer = provider.get_tracer("switchyard")

    def request(
        self, path: str, endpoint: str, headers: Mapping[str, str], kinds: Mapping[str, str]
    ) -> RequestTrace:
        """A request's trace, its SERVER span started; `kinds`: each backend's kind."""
        parent = _PROPAGATOR.extract(headers)
        span = self._tracer.start_span(
            f"POST {path}",
            context=parent,
            kind=SpanKind.SERVER,
            attributes={"http.request.method": "POST", "url.path": path, "http.route": path},
        )
        return RequestTrace(self._tracer, span, OPERATIONS.get(endpoint, endpoint), kinds)

    async def flush(self) -> None:
        """Export every span ended so far (the SDK blocks: on a thread)."""
        await asyncio.to_thread(self._provider.force_flush)

    async def shutdown(self) -> None:
        """Export what is queued and stop (the SDK blocks: on a thread)."""
        await asyncio.to_thread(self._provider.shutdown)


class RequestTrace:
    """One request's spans (see the module docstring); the dispatcher's `AttemptTracer`."""

    __slots__ = ("_context", "_ended", "_kinds", "_operation", "_served", "_span", "_tracer")

    def __init__(
        self, tracer: Tracer, span: Span, operation: str, kinds: Mapping[str, str]
    ) -> None:
        self._tracer, self._span, self._operation, self._kinds = tracer, span, operation, kinds
        self._context: Context = set_span_in_context(span)
        self._served: UpstreamSpan | None = None
        self._ended = False

    def decided(self, record: DecisionRecord) -> None:
        """The routing decision, as a span of the decision's own duration ending now."""
        decision, end = record.decision, time.time_ns()
        chosen = decision.chosen
        attributes: dict[str, str | int] = {
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
        span = self._tracer.start_span(
            "switchyard.route",
            context=self._context,
            kind=SpanKind.INTERNAL,
            start_time=end - int(decision.total_us * 1000),
            attributes=attributes,
        )
        span.end(end_time=end)
        self._span.set_attributes(
            {"switchyard.route": decision.route, "switchyard.decision_id": decision.id}
        )

    def attempt(self, backend: str, route: str, model: str) -> UpstreamSpan:
        """A CLIENT span for one upstream attempt; its context goes to the backend."""
        span = self._tracer.start_span(
            f"{self._operation} {model}",
            context=self._context,
            kind=SpanKind.CLIENT,
            attributes={
                "gen_ai.operation.name": self._operation,
                "gen_ai.provider.name": self._kinds.get(backend, "openai"),
                "gen_ai.request.model": model,
                "switchyard.backend": backend,
                "switchyard.route": route,
            },
        )
        headers: dict[str, str] = {}
        _PROPAGATOR.inject(headers, context=set_span_in_context(span))
        return UpstreamSpan(self, span, headers)

    def finish(
        self, status: int, error: str | None, usage: Usage | None, served_model: str | None
    ) -> None:
        """The request ended (through its `Exchange`): the served attempt's span and the
        server span end, with the usage and the outcome. Once: a cascade's request ends
        with its first tier's exchange (its later tiers are not traced yet)."""
        if self._ended:
            return
        self._ended = True
        attributes = _usage_attributes(usage)
        if served_model:
            attributes["gen_ai.response.model"] = served_model
        served, self._served = self._served, None
        if served is not None:
            served.finish(attributes, error)
        self._span.set_attributes({**attributes, "http.response.status_code": status})
        if error is not None:
            self._span.set_attribute("error.type", error)
        if status >= 500:  # a 4xx is the client's error, not the server span's (HTTP semconv)
            _fail(self._span, error or str(status))
        self._span.end()

    def _committed(self, span: UpstreamSpan) -> None:
        self._served = span


class UpstreamSpan:
    """One attempt's CLIENT span (`AttemptSpan`)."""

    __slots__ = ("_span", "_trace", "headers")

    def __init__(self, trace: RequestTrace, span: Span, headers: dict[str, str]) -> None:
        self._trace, self._span, self.headers = trace, span, headers

    def ended(self, outcome: str) -> None:
        self._span.set_attribute("switchyard.outcome", outcome)
        if outcome == "ok":
            self._trace._committed(self)
            return
        _fail(self._span, outcome)
        self._span.end()

    def finish(self, attributes: dict[str, str | int | bool], error: str | None) -> None:
        self._span.set_attributes(attributes)
        if error is not None:
            self._span.set_attribute("switchyard.outcome", error)
            _fail(self._span, error)
        self._span.end()


def _usage_attributes(usage: Usage | None) -> dict[str, str | int | bool]:
    if usage is None:
        return {}
    cached = usage.cached_tokens or 0
    return {
        "gen_ai.usage.input_tokens": usage.prompt_tokens,
        "gen_ai.usage.output_tokens": usage.completion_tokens,
        "gen_ai.usage.cache_read.input_tokens": cached,
        "switchyard.cache_hit": cached > 0,
    }


def _fail(span: Span, code: str) -> None:
    span.set_attribute("error.type", code)
    span.set_status(Status(StatusCode.ERROR, code))
