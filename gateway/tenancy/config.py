"""The `keys`, `limits` and `budgets` config sections: virtual keys from the store, rate
limits, and spend limits."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Literal

from pydantic import Field

from gateway.config.redis import RedisBackedSection
from gateway.config.strict import StrictConfig


class KeysConfig(StrictConfig):
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


class RateLimit(StrictConfig):
    """Requests and tokens per minute; null: no limit of that kind."""

    rpm: int | None = Field(None, ge=1, description="Requests per minute.")
    tpm: int | None = Field(
        None, ge=1, description="Tokens per minute, charged as prompt + max_tokens at admission."
    )


class LimitsConfig(RedisBackedSection):
    """RPM / TPM limits per key (set on each key) and per route (here). With `backend:
    redis`, `timeout_ms` bounds one admission's round trip; past it, or after a Redis
    failure for `retry_redis_s`, buckets are this process's own."""

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


OnExhausted = Literal["reject", "fallback"]
"""When a budget is spent: refuse with 429, or send the request to a fallback route."""


class RouteBudget(StrictConfig):
    """A route's spend limits in US dollars per calendar day and month (UTC)."""

    usd_per_day: float | None = Field(None, gt=0, description="Spend per UTC day; null: none.")
    usd_per_month: float | None = Field(
        None, gt=0, description="Spend per UTC calendar month; null: none."
    )
    on_exhausted: OnExhausted = Field(
        "reject", description="When spent: 429 `insufficient_quota`, or a fallback route."
    )
    fallback_route: str | None = Field(
        None,
        min_length=1,
        description="With `fallback`: the (cheaper) route to use; null: the route's fallbacks.",
    )


class KeyBudgetPolicy(StrictConfig):
    """What happens when a key's own budget (set on the key) is spent."""

    on_exhausted: OnExhausted = Field(
        "reject", description="Default for keys that set none of their own."
    )
    fallback_route: str | None = Field(
        None,
        min_length=1,
        description="With `fallback`: the (cheaper) route to use; null: the route's fallbacks.",
    )


class BudgetsConfig(RedisBackedSection):
    """Spend limits per key (on each key) and per route (here), in UTC calendar windows.
    With `backend: redis`, `timeout_ms` bounds one round trip (a cache miss, a flush, a
    read); past it, or after a Redis failure for `retry_redis_s`, spend is counted
    in-process."""

    flush_ms: float = Field(
        250.0, gt=0, le=60_000, description="Finished requests' spend is added this often."
    )
    refresh_ms: float = Field(
        1000.0, gt=0, le=60_000, description="Cached spend is re-read from Redis this often."
    )
    queue_size: int = Field(
        10_000, ge=1, description="Finished requests waiting to be accounted; beyond: dropped."
    )
    max_cached_keys: int = Field(
        10_000, ge=1, description="Keys whose spend is kept fresh; the least recent go."
    )
    keys: KeyBudgetPolicy = KeyBudgetPolicy()
    routes: dict[str, RouteBudget] = Field(
        default_factory=dict, description="Per route name, shared by every caller."
    )


def budget_problems(fallbacks: Mapping[str, Sequence[str]], budgets: BudgetsConfig) -> list[str]:
    """Budgets naming unknown routes, or falling back where there is nowhere to go.
    `fallbacks`: each route's name and its `fallbacks`."""
    problems = [
        f"budgets.routes.{name}: unknown route" for name in budgets.routes if name not in fallbacks
    ]
    target = budgets.keys.fallback_route
    if target is not None and target not in fallbacks:
        problems.append(f"budgets.keys.fallback_route: unknown route {target!r}")
    for name, budget in budgets.routes.items():
        where = f"budgets.routes.{name}"
        if budget.fallback_route is not None and budget.fallback_route not in fallbacks:
            problems.append(f"{where}.fallback_route: unknown route {budget.fallback_route!r}")
        elif budget.fallback_route == name:
            problems.append(f"{where}.fallback_route: a route cannot fall back to itself")
        if budget.usd_per_day is None and budget.usd_per_month is None:
            problems.append(f"{where}: set usd_per_day, usd_per_month or both")
        no_target = budget.fallback_route is None and not fallbacks.get(name)
        if budget.on_exhausted == "fallback" and name in fallbacks and no_target:
            problems.append(
                f"{where}.on_exhausted: fallback needs fallback_route or route fallbacks"
            )
    return problems
