"""Turning tracing on at start-up and flushing it at stop.

`wanted` decides from the config and the environment without importing OpenTelemetry;
`start_tracing` builds the SDK's pieces only then: a tracer provider of the gateway's own
(never the process-wide global: a library in the same process keeps its own), a parent-based
ratio sampler (or the one `OTEL_TRACES_SAMPLER` names), and a `BatchSpanProcessor` with a
bounded queue in front of the OTLP/HTTP exporter, so a slow collector costs dropped spans,
never a request's time.
"""

from __future__ import annotations

import importlib.util
import logging
import os
from typing import TYPE_CHECKING

from gateway.errors import InvalidConfig

if TYPE_CHECKING:
    from gateway.tracing.config import TracingConfig
    from gateway.tracing.spans import Cost, Tracing

logger = logging.getLogger("switchyard")

ENDPOINT_VARIABLES = ("OTEL_EXPORTER_OTLP_TRACES_ENDPOINT", "OTEL_EXPORTER_OTLP_ENDPOINT")
_EXTRA = "the `tracing` extra (pip install 'switchyard[tracing]')"


def wanted(config: TracingConfig, environ: dict[str, str] | None = None) -> bool:
    """Whether tracing is on: the config's `enabled`, else an OTLP endpoint in the
    environment with the SDK installed (a set variable without it is logged, not fatal)."""
    env = os.environ if environ is None else environ
    if config.enabled is not None:
        return config.enabled
    if not any(env.get(name) for name in ENDPOINT_VARIABLES):
        return False
    if not _installed():
        logger.warning("OTEL_EXPORTER_OTLP_ENDPOINT is set but %s is not installed", _EXTRA)
        return False
    return True


def start_tracing(config: TracingConfig, cost: Cost | None = None) -> Tracing | None:
    """The gateway's tracing when it is on, else None (and nothing imported); `cost`
    prices an answer for its spans (`switchyard.cost_usd`)."""
    if not wanted(config):
        return None
    if not _installed():
        raise InvalidConfig("tracing", [f"enabled is true but {_EXTRA} is not installed"])
    from opentelemetry.exporter.otlp.proto.http.trace_exporter import OTLPSpanExporter
    from opentelemetry.sdk.resources import Resource
    from opentelemetry.sdk.trace import TracerProvider
    from opentelemetry.sdk.trace.export import BatchSpanProcessor
    from opentelemetry.sdk.trace.sampling import ParentBased, TraceIdRatioBased

    from gateway.tracing.spans import Tracing

    name = config.service_name or os.environ.get("OTEL_SERVICE_NAME") or "switchyard"
    sampler = None  # the SDK reads OTEL_TRACES_SAMPLER(_ARG), parent-based always-on by default
    if config.sample_ratio is not None:
        sampler = ParentBased(TraceIdRatioBased(config.sample_ratio))
    provider = TracerProvider(sampler=sampler, resource=Resource.create({"service.name": name}))
    exporter = OTLPSpanExporter(endpoint=config.endpoint, headers=_headers(config.headers_env))
    provider.add_span_processor(BatchSpanProcessor(exporter, max_queue_size=config.max_queue_spans))
    return Tracing(provider, cost)


def _headers(variable: str | None) -> dict[str, str] | None:
    """`key=value,key2=value2` from the variable the config names; None: the SDK's own."""
    if variable is None:
        return None
    raw = os.environ.get(variable, "")
    pairs = (item.split("=", 1) for item in raw.split(",") if "=" in item)
    return {key.strip(): value.strip() for key, value in pairs}


def _installed() -> bool:
    return importlib.util.find_spec("opentelemetry") is not None and (
        importlib.util.find_spec("opentelemetry.sdk") is not None
    )
