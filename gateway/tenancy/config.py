"""The `keys` and `limits` config sections: virtual keys from the store, and rate limits."""

from __future__ import annotations

from typing import Literal

from pydantic import BaseModel, ConfigDict, Field


class _Strict(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)


class KeysConfig(_Strict):
    """Virtual client keys kept (hashed) in the store and cached in memory."""

    enabled: bool = Field(
        False, description="Accept the store's virtual keys (needs store.url and a secret)."
    )
    secret_env: str = Field(
        "SWITCHYARD_KEY_SECRET",
        min_length=1,
        description="Env var holding the server secret that keys are HMAC'd with.",
    )
    secret_file: str | None = Field(
        None, description="A file holding the secret instead (read when set; wins over the env)."
    )
    refresh_s: float = Field(
        5.0, gt=0, le=3600, description="Cache refresh period: a revoked key works this long."
    )
    load_timeout_s: float = Field(
        5.0, gt=0, le=60, description="One load of the key table, at start and per refresh."
    )
    max_keys: int = Field(100_000, ge=1, description="Most active keys loaded into the cache.")
    max_team_labels: int = Field(
        32, ge=0, le=1000, description="Distinct `team` metric labels; beyond them: `other`."
    )


class RateLimit(_Strict):
    """Requests and tokens per minute; null: no limit of that kind."""

    rpm: int | None = Field(None, ge=1, description="Requests per minute.")
    tpm: int | None = Field(
        None, ge=1, description="Tokens per minute, charged as prompt + max_tokens at admission."
    )


class LimitsConfig(_Strict):
    """RPM / TPM limits per key (set on each key) and per route (here)."""

    backend: Literal["local", "redis"] = Field(
        "local", description="Where the buckets live: this process, or Redis for all replicas."
    )
    redis_url: str | None = Field(
        None,
        pattern=r"^(redis|rediss|unix)://",
        description="Redis for the buckets; null: state.redis_url.",
    )
    namespace: str = Field(
        "switchyard", min_length=1, pattern=r"^[A-Za-z0-9_.:-]+$", description="Key prefix."
    )
    timeout_ms: float = Field(
        50.0, gt=0, le=5000, description="One admission's Redis round trip, connect included."
    )
    retry_redis_s: float = Field(
        5.0, gt=0, description="After a Redis failure, buckets stay in-process this long."
    )
    local_max_buckets: int = Field(
        100_000, ge=1, description="In-process buckets kept; the least recently used go."
    )
    default_max_tokens: int = Field(
        256,
        ge=0,
        description="Completion tokens charged to TPM when a request sets no max_tokens.",
    )
    routes: dict[str, RateLimit] = Field(
        default_factory=dict, description="Per route name, shared by every caller."
    )
