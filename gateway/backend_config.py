"""A backend's configuration: where it is, what it serves, its limits, cache and metrics."""

from __future__ import annotations

import os

from pydantic import BaseModel, ConfigDict, Field, model_validator

from emulator.settings import EmulatorOptions
from gateway.placement import PlacementTag
from gateway.quality.config import ProbeConfig
from gateway.telemetry.config import PricingConfig
from providers.settings import DEFAULT_IDLE_KEEPALIVE_S, BackendKind, ProviderSettings


class StrictConfig(BaseModel):
    """Every config section: unknown keys are errors, values are frozen."""

    model_config = ConfigDict(extra="forbid", frozen=True)


class BackendTimeouts(StrictConfig):
    """A backend's own deadlines; an unset field inherits the top-level `timeouts`."""

    connect_s: float | None = Field(None, gt=0)
    first_token_s: float | None = Field(None, gt=0)
    between_chunks_s: float | None = Field(None, gt=0)


class CacheConfig(StrictConfig):
    """What the router assumes about a backend's prompt (KV) cache and speed."""

    capacity_tokens: int = Field(
        100_000, ge=0, description="KV cache size in tokens; 0 disables prefix tracking."
    )
    ttl_s: float = Field(
        600.0, gt=0, description="How long an unused prefix is assumed to stay cached."
    )
    key: str | None = Field(
        None, description="Backends with the same key share one cache (default: own cache)."
    )
    prefill_tokens_per_s: float = Field(
        10_000.0, gt=0, description="Prior for uncached prefill speed; learned from traffic."
    )
    tpot_ms: float = Field(20.0, gt=0, description="Prior for time per output token.")


ENGINE_KINDS: frozenset[str] = frozenset({"vllm", "sglang", "llama-cpp", "emulated"})
"""Kinds whose metrics endpoint is known: `/metrics` at the base URL's origin."""


class MetricsConfig(StrictConfig):
    """Polling the engine's Prometheus endpoint for its own running/waiting/KV numbers."""

    enabled: bool = True
    url: str | None = Field(
        None, pattern=r"^https?://", description="Full URL; default: base_url's origin + path."
    )
    path: str = Field("/metrics", pattern=r"^/", description="Used when url is not set.")
    interval_s: float = Field(1.0, ge=0.05, description="Time between two scrapes.")
    timeout_s: float = Field(0.5, gt=0, description="Whole scrape: connect, status, body.")
    stale_after_s: float = Field(
        5.0, gt=0, description="A reading older than this is ignored by policies."
    )
    max_body_bytes: int = Field(
        1024 * 1024, ge=1024, description="Larger responses fail the scrape."
    )

    @model_validator(mode="after")
    def _check_timing(self) -> MetricsConfig:
        if self.url is not None and "path" in self.model_fields_set:
            raise ValueError("path: set url or path, not both")
        if self.stale_after_s < 2 * self.interval_s:
            raise ValueError("stale_after_s: must be at least twice interval_s")
        if self.timeout_s > self.stale_after_s:
            raise ValueError("timeout_s: must not exceed stale_after_s")
        return self

    @property
    def explicit(self) -> bool:
        """Whether the address was given, not derived from the backend's kind."""
        return self.url is not None or "path" in self.model_fields_set


class BackendConfig(StrictConfig):
    name: str = Field(min_length=1, pattern=r"^[A-Za-z0-9_.:-]+$")
    kind: BackendKind = "openai-compatible"
    base_url: str | None = Field(
        None, pattern=r"^https?://", description="Required unless kind is emulated."
    )
    emulator: EmulatorOptions | None = Field(
        None, description="kind emulated: how its engine behaves (the emulator's defaults)."
    )
    api_key_env: str | None = Field(
        None, description="Name of the environment variable holding the key; never the key."
    )
    models: list[str] = Field(min_length=1)
    tags: list[PlacementTag] = Field(
        default_factory=list,
        description="Placement tags (`local`, `eu`, ...) that routes and requests may require.",
    )
    context_window_tokens: int | None = Field(
        None, ge=1, description="Prompt plus output tokens it accepts per sequence; unset: unknown."
    )
    max_concurrency: int = Field(64, ge=1)
    max_connections: int = Field(256, ge=1)
    idle_keepalive_s: float = Field(
        DEFAULT_IDLE_KEEPALIVE_S,
        gt=0,
        description="Idle connections to the backend are closed after this. Keep it below "
        "the backend's own keep-alive (uvicorn, hence vLLM and SGLang, and llama.cpp: 5 s), "
        "or a request may be sent on a connection the backend is closing at that moment.",
    )
    cache: CacheConfig = CacheConfig()
    timeouts: BackendTimeouts | None = Field(
        None, description="Per-backend deadlines; total_s is per request, so only top-level."
    )
    metrics: MetricsConfig | None = Field(
        None, description="Scrape the engine's /metrics for its own load (default: off)."
    )
    probes: ProbeConfig | None = Field(
        None, description="This backend's quality probes; unset: `quality.probes`."
    )
    pricing: PricingConfig | None = Field(
        None, description="Prices for the cost in records and metrics (unset: cost 0)."
    )

    @model_validator(mode="after")
    def _check_address(self) -> BackendConfig:
        self._check_metrics()
        if self.kind == "emulated":
            if self.base_url is not None:
                raise ValueError("base_url: an emulated backend is started on a free port")
        elif self.base_url is None:
            raise ValueError("base_url: required for this kind of backend")
        elif self.emulator is not None:
            raise ValueError("emulator: only for kind emulated")
        return self

    def _check_metrics(self) -> None:
        metrics = self.metrics
        if metrics is None or not metrics.enabled:
            return
        if self.kind == "emulated" and metrics.url is not None:
            raise ValueError("metrics.url: an emulated backend is started on a free port")
        if self.kind not in ENGINE_KINDS and not metrics.explicit:
            raise ValueError(
                f"metrics: kind {self.kind} has no known metrics endpoint; "
                "set metrics.url or metrics.path"
            )

    @property
    def scrapes_metrics(self) -> bool:
        return self.metrics is not None and self.metrics.enabled

    def api_key(self) -> str | None:
        return os.environ.get(self.api_key_env) if self.api_key_env else None

    def provider_settings(self) -> ProviderSettings:
        """What this backend's provider adapter is opened with (the key read now)."""
        return ProviderSettings(
            name=self.name,
            kind=self.kind,
            base_url=self.base_url,
            api_key=self.api_key(),
            models=tuple(self.models),
            max_connections=self.max_connections,
            idle_keepalive_s=self.idle_keepalive_s,
            emulator=self.emulator,
        )
