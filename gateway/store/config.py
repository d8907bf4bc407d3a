"""The record store's settings: which database, how records are queued, batched and kept."""

from __future__ import annotations

import os

from pydantic import Field, field_validator

from gateway.config.strict import StrictConfig
from gateway.errors import ConfigError

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


class StoreConfig(StrictConfig):
    """The database that keeps request records, quality events and scores, probe results.

    Writes go through a bounded, batched queue off the request path; while the database is
    down, records wait in the queue; when it is full, they are dropped and counted. Serving
    goes on either way.
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


DATABASE_URL_ENV = "SWITCHYARD_DATABASE_URL"


def resolve_url(config: StoreConfig) -> str | None:
    """The store's URL: SWITCHYARD_DATABASE_URL, else `store.url`; None (store off) when empty.

    The environment's URL gets the config's normalisation (`postgresql://` means asyncpg);
    one naming another database raises `ConfigError`.
    """
    env = (os.environ.get(DATABASE_URL_ENV) or "").strip()
    if env:
        try:
            return normalize_database_url(env)
        except ValueError as exc:
            raise ConfigError("environment", [f"{DATABASE_URL_ENV}: {exc}"]) from None
    return (config.url or "").strip() or None
