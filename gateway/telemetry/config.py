"""Settings for request records: prices, the record store, metrics and the dashboard."""

from __future__ import annotations

from pydantic import BaseModel, ConfigDict, Field, field_validator, model_validator


class _Strict(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)


class PricingConfig(_Strict):
    """What a backend charges, in US dollars per million tokens (cost in records/metrics)."""

    input_usd_per_mtok: float = Field(0.0, ge=0, description="Uncached prompt tokens.")
    cached_input_usd_per_mtok: float | None = Field(
        None, ge=0, description="Prompt tokens the provider reports cached; unset: input price."
    )
    output_usd_per_mtok: float = Field(0.0, ge=0, description="Completion tokens.")

    def cost_usd(self, prompt_tokens: int, cached_tokens: int, completion_tokens: int) -> float:
        cached = min(max(cached_tokens, 0), prompt_tokens)
        cached_price = self.cached_input_usd_per_mtok
        if cached_price is None:
            cached_price = self.input_usd_per_mtok
        total = (
            (prompt_tokens - cached) * self.input_usd_per_mtok
            + cached * cached_price
            + completion_tokens * self.output_usd_per_mtok
        )
        return total / 1_000_000


_ASYNC_DRIVERS = {
    "sqlite": "sqlite+aiosqlite",
    "sqlite+aiosqlite": "sqlite+aiosqlite",
    "postgres": "postgresql+asyncpg",
    "postgresql": "postgresql+asyncpg",
    "postgresql+asyncpg": "postgresql+asyncpg",
}


def normalize_database_url(url: str) -> str:
    """The URL with its async driver (`postgresql://` becomes `postgresql+asyncpg://`,
    `sqlite://` `sqlite+aiosqlite://`); ValueError for any other database or driver."""
    scheme, sep, rest = url.partition("://")
    driver = _ASYNC_DRIVERS.get(scheme.lower())
    if not sep or driver is None:
        raise ValueError(
            "expected sqlite+aiosqlite:///file.db or postgresql+asyncpg://user@host/db "
            f"(got scheme {scheme!r})"
        )
    return f"{driver}://{rest}"


class StoreConfig(_Strict):
    """The database that keeps request records, quality events and scores, probe results.

    Writes go through a bounded, batched queue off the request path; when it is full or the
    database is down, records are dropped and counted, and serving goes on.
    """

    url: str | None = Field(
        None,
        description="SQLAlchemy async URL (sqlite+aiosqlite:///file.db, "
        "postgresql+asyncpg://user@host/db); SWITCHYARD_DATABASE_URL overrides; unset: off.",
    )
    queue_size: int = Field(10_000, ge=1, description="Records waiting to be written.")
    batch_size: int = Field(
        100,
        ge=1,
        description="Most rows written in one transaction (also bounds how long "
        "one batch's preparation holds the event loop).",
    )
    flush_interval_s: float = Field(1.0, gt=0, description="Longest wait before a write.")
    retention_days: float = Field(7.0, gt=0, description="Older rows are deleted.")
    retention_check_s: float = Field(3600.0, gt=0, description="Time between two clean-ups.")
    quality_snapshot_s: float = Field(60.0, gt=0, description="Period of quality score rows.")
    store_prompts: bool = Field(
        False, description="Also keep each request's messages (off: no prompt text is stored)."
    )
    max_prompt_bytes: int = Field(
        16 * 1024,
        ge=1,
        description="Stored prompts are cut to this size; with queue_size it bounds the "
        "queue's memory (10,000 x 16 KiB = 160 MiB at most).",
    )
    migrate_on_start: bool = Field(True, description="Run the migrations when the gateway starts.")
    connect_timeout_s: float = Field(5.0, gt=0)
    write_timeout_s: float = Field(
        10.0, gt=0, description="A batch (or a retention chunk) taking longer fails."
    )
    retry_after_s: float = Field(5.0, gt=0, description="Pause after a failed write.")

    @field_validator("url")
    @classmethod
    def _async_driver(cls, url: str | None) -> str | None:
        return normalize_database_url(url) if url else None


class TelemetryConfig(_Strict):
    """Prometheus `/metrics` and the built-in `/dashboard`."""

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
