"""Settings for OpenTelemetry traces (`tracing:`); the standard `OTEL_*` variables fill
in what the file leaves out (`gateway.tracing.setup` reads them)."""

from __future__ import annotations

from pydantic import Field

from gateway.config.strict import StrictConfig


class TracingConfig(StrictConfig):
    """Traces exported over OTLP/HTTP (protobuf) with the `tracing` extra installed."""

    enabled: bool | None = Field(
        None,
        description="true: on; false: off whatever the environment says; left out: on "
        "when OTEL_EXPORTER_OTLP_ENDPOINT or OTEL_EXPORTER_OTLP_TRACES_ENDPOINT is set "
        "(and the extra is installed).",
    )
    endpoint: str | None = Field(
        None,
        description="The OTLP/HTTP traces URL (`http://collector:4318/v1/traces`). Left "
        "out: OTEL_EXPORTER_OTLP_TRACES_ENDPOINT, else OTEL_EXPORTER_OTLP_ENDPOINT + "
        "`/v1/traces`, else `http://localhost:4318/v1/traces`.",
    )
    service_name: str | None = Field(
        None, description="Left out: OTEL_SERVICE_NAME, else `switchyard`."
    )
    sample_ratio: float | None = Field(
        None,
        ge=0.0,
        le=1.0,
        description="Head sampling: the share of new traces kept (a client's sampled "
        "`traceparent` is followed: parent-based). Left out: OTEL_TRACES_SAMPLER / "
        "OTEL_TRACES_SAMPLER_ARG, else 1.0.",
    )
    headers_env: str | None = Field(
        None,
        description="The name of an environment variable holding the exporter's headers "
        "(`key=value,key2=value2`, e.g. an API key of the tracing backend); left out: "
        "OTEL_EXPORTER_OTLP_TRACES_HEADERS / OTEL_EXPORTER_OTLP_HEADERS, as the SDK reads.",
    )
    max_queue_spans: int = Field(
        2048, ge=1, description="Spans waiting for export; past it, new spans are dropped."
    )
