"""Settings for request records: prices, the access log, metrics and the dashboard."""

from __future__ import annotations

from typing import Literal

from pydantic import Field, model_validator

from gateway.config.strict import StrictConfig
from policies.prices import Prices

PricingConfig = Prices
"""A backend's `pricing` (and each of its `model_pricing`): `policies.prices.Prices`, where
policies read it too."""


AccessLogMode = Literal["off", "line", "json"]
"""`line`: one short line per request; `json`: the whole record and its decision."""


class RefusedConfig(StrictConfig):
    """Requests the gateway refuses itself (a malformed body, an unknown model, a bad key,
    a body too large, a rate limit, a budget, flow control's 429s): how many of each
    (status, code) become access-log lines and stored records. Every refusal is counted
    (`switchyard_rejected_requests_total`); these bound only what is written, per process."""

    log_lines_per_minute: int = Field(
        60,
        ge=0,
        description="Access-log lines per (status, code): a token bucket of this many that "
        "refills at this many a minute; the lines it holds back are summed up in one "
        "summary line per summary_every_s. 0: no refused lines (summaries only).",
    )
    records_per_minute: int = Field(
        10,
        ge=0,
        description="Refused requests per (status, code) kept as request records (the "
        "store's rows, the dashboard's list), a token bucket as above; 0: none.",
    )
    summary_every_s: float = Field(
        60.0,
        ge=1.0,
        le=3600.0,
        description="Longest a (status, code)'s held-back lines wait to be summed up in one line.",
    )
    max_reason_chars: int = Field(
        200, ge=16, le=4096, description="A refusal's reason (its error message) is cut to this."
    )
    max_codes: int = Field(
        64,
        ge=1,
        le=1024,
        description="Distinct (status, code) pairs counted and limited apart; beyond them "
        "the code counts as `other`.",
    )


class TelemetryConfig(StrictConfig):
    """The access log, Prometheus `/metrics` and the built-in `/dashboard`."""

    access_log: AccessLogMode = Field(
        "line",
        description="Per request, on the telemetry thread: off, one short line "
        "(route, backend, status, time, tokens, decision id), or the whole record as JSON.",
    )
    prometheus: bool = Field(True, description="Serve Prometheus metrics at /metrics.")
    dashboard: bool = Field(True, description="Serve the dashboard at /dashboard.")
    bucket_s: int = Field(10, ge=1, le=3600, description="Dashboard time-series resolution.")
    window_s: int = Field(3600, ge=60, description="Dashboard history kept in memory.")
    max_error_codes: int = Field(
        16, ge=1, description="Distinct error codes kept per backend per bucket."
    )
    refused: RefusedConfig = Field(
        default_factory=RefusedConfig,
        description="How many refused requests are logged and kept as records.",
    )

    @model_validator(mode="after")
    def _check_window(self) -> TelemetryConfig:
        if self.window_s < 2 * self.bucket_s:
            raise ValueError("window_s: must hold at least two buckets")
        if self.window_s // self.bucket_s > 8640:
            raise ValueError("window_s: at most 8,640 buckets")
        return self
