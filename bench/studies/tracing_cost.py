"""CPU per request of the trace spans (server, routing decision, one client attempt) with
the SDK's batch processor in front of an exporter that drops what it is given: at sample
ratio 1.0 and 0.01. Process CPU, so the batch thread counts; the OTLP protobuf encoding and
HTTP post (also on that thread) do not. Quoted in docs/operations.md#tracing.

    python -m bench.studies.tracing_cost
"""

from __future__ import annotations

import time
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any, cast

from opentelemetry.sdk.trace import ReadableSpan, TracerProvider
from opentelemetry.sdk.trace.export import BatchSpanProcessor, SpanExporter, SpanExportResult
from opentelemetry.sdk.trace.sampling import ParentBased, TraceIdRatioBased

from gateway.tracing.spans import Tracing
from providers.usage import Usage

REQUESTS = 20_000


class _Dropped(SpanExporter):
    def export(self, spans: Sequence[ReadableSpan]) -> SpanExportResult:
        return SpanExportResult.SUCCESS


@dataclass
class _Decision:  # the fields of a `Decision` the trace reads
    route: str = "default"
    id: str = "d0"
    picker: str = "max-score-picker"
    picker_reason: str = "best score"
    order: tuple[str, ...] = ("a", "b")
    total_us: float = 50.0
    chosen: str = "a"


@dataclass
class _Record:
    decision: _Decision = field(default_factory=_Decision)
    work: Any = field(default_factory=lambda: type("W", (), {"cached_tokens": {"a": 10}})())


def per_request_us(ratio: float) -> float:
    provider = TracerProvider(sampler=ParentBased(TraceIdRatioBased(ratio)))
    provider.add_span_processor(BatchSpanProcessor(_Dropped()))
    tracing, usage, record = Tracing(provider), Usage(100, 10, 0), cast(Any, _Record())
    start = time.process_time()
    for _ in range(REQUESTS):
        trace = tracing.request("/v1/chat/completions", "chat.completions", {}, {"a": "vllm"})
        trace.decided(record)
        trace.attempt("a", "default", "m").ended("ok")
        trace.finish(200, None, usage, "m")
    provider.shutdown()
    return (time.process_time() - start) / REQUESTS * 1e6


if __name__ == "__main__":
    for ratio in (1.0, 0.01):
        print(f"sample ratio {ratio}: {per_request_us(ratio):.1f} us CPU per request")
