"""A real OTLP/HTTP traces receiver on loopback: accepts `POST /v1/traces`, decodes the
protobuf `ExportTraceServiceRequest` (opentelemetry-proto) and counts every span by its
service, keeping them when asked (the tracing tests read them; `switchyard bench cpu`'s
tracing variants only count what their gateways exported)."""

from __future__ import annotations

import asyncio
import gzip
from collections import Counter
from dataclasses import dataclass, field
from typing import Any

from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import (
    ExportTraceServiceRequest,
    ExportTraceServiceResponse,
)
from opentelemetry.proto.common.v1.common_pb2 import AnyValue
from opentelemetry.proto.trace.v1.trace_pb2 import Span

KINDS = {
    Span.SPAN_KIND_SERVER: "server",
    Span.SPAN_KIND_CLIENT: "client",
    Span.SPAN_KIND_INTERNAL: "internal",
}


@dataclass(frozen=True)
class ReceivedSpan:
    name: str
    kind: str
    trace_id: str
    span_id: str
    parent_id: str
    attributes: dict[str, Any]
    error: bool
    service: str
    start_ns: int
    end_ns: int


def _value(value: AnyValue) -> Any:
    which = value.WhichOneof("value")
    if which == "array_value":
        return [_value(item) for item in value.array_value.values]
    return getattr(value, which) if which is not None else None


@dataclass
class OtlpReceiver:
    keep: bool = True
    """Keep each span decoded (`spans`); else only count them (`by_service`)."""
    spans: list[ReceivedSpan] = field(default_factory=list)
    paths: list[str] = field(default_factory=list)
    by_service: Counter[str] = field(default_factory=Counter)
    _server: asyncio.Server | None = None
    port: int = 0

    @property
    def endpoint(self) -> str:
        return f"http://127.0.0.1:{self.port}/v1/traces"

    async def start(self) -> None:
        self._server = await asyncio.start_server(self._serve, "127.0.0.1", 0)
        self.port = self._server.sockets[0].getsockname()[1]

    async def stop(self) -> None:
        assert self._server is not None
        self._server.close()
        await self._server.wait_closed()

    async def _serve(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        try:
            while True:
                head = await reader.readuntil(b"\r\n\r\n")
                lines = head.decode("latin-1").split("\r\n")
                method, path, _ = lines[0].split(" ", 2)
                headers = {
                    k.strip().lower(): v.strip()
                    for k, v in (line.split(":", 1) for line in lines[1:] if ":" in line)
                }
                body = await reader.readexactly(int(headers.get("content-length", "0")))
                if headers.get("content-encoding") == "gzip":
                    body = gzip.decompress(body)
                self.paths.append(f"{method} {path}")
                self._decode(body)
                answer = ExportTraceServiceResponse().SerializeToString()
                writer.write(
                    b"HTTP/1.1 200 OK\r\ncontent-type: application/x-protobuf\r\n"
                    b"content-length: %d\r\n\r\n%s" % (len(answer), answer)
                )
                await writer.drain()
        except (asyncio.IncompleteReadError, ConnectionError):
            pass
        finally:
            writer.close()

    def _decode(self, body: bytes) -> None:
        request = ExportTraceServiceRequest.FromString(body)
        for resource_spans in request.resource_spans:
            resource = {a.key: _value(a.value) for a in resource_spans.resource.attributes}
            service = str(resource.get("service.name"))
            for scope_spans in resource_spans.scope_spans:
                self.by_service[service] += len(scope_spans.spans)
                if self.keep:
                    self.spans += [_received(span, service) for span in scope_spans.spans]


def _received(span: Span, service: str) -> ReceivedSpan:
    return ReceivedSpan(
        name=span.name,
        kind=KINDS.get(span.kind, str(span.kind)),
        trace_id=span.trace_id.hex(),
        span_id=span.span_id.hex(),
        parent_id=span.parent_span_id.hex(),
        attributes={a.key: _value(a.value) for a in span.attributes},
        error=span.status.code == span.status.STATUS_CODE_ERROR,
        service=service,
        start_ns=span.start_time_unix_nano,
        end_ns=span.end_time_unix_nano,
    )
