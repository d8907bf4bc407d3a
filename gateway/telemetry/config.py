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

    @model_validator(mode="after")
    def _check_window(self) -> TelemetryConfig:
        if self.window_s < 2 * self.bucket_s:
            raise ValueError("window_s: must hold at least two buckets")
        if self.window_s // self.bucket_s > 8640:
            raise ValueError("window_s: at most 8,640 buckets")
        return self
