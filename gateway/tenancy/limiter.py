"""RPM and TPM limits per key and per route, admitted before a request is dispatched.

A request is charged one request and `prompt tokens + max_tokens` tokens (the limit's
default when it sets none) against each limit that applies to it: its key's (a virtual
key's `rpm` / `tpm`) and its route's (`limits.routes`). With `limits.backend: redis` the
buckets are shared by every replica (one bounded round trip); when Redis fails or is slow,
admission falls back to this process's own buckets for `limits.retry_redis_s` (logged
once per outage), so a limit is then enforced per replica, and serving never stops.
"""

from __future__ import annotations

import asyncio
import logging
import math
import time
from typing import TYPE_CHECKING

from gateway.errors import RateLimited
from gateway.tenancy.buckets import (
    BucketSpec,
    LimitKind,
    LocalBuckets,
    Outcome,
    duration,
    reset_s,
    wait_s,
)
from gateway.tenancy.config import LimitsConfig, RateLimit

if TYPE_CHECKING:
    from collections.abc import Callable, Sequence

    from gateway.tenancy.caller import Caller
    from gateway.tenancy.redis_buckets import RedisBuckets

logger = logging.getLogger("switchyard.limits")

_PER_MINUTE = {"requests": "requests per min (RPM)", "tokens": "tokens per min (TPM)"}


class RateLimiter:
    """Admits a request against its limits (see the module docstring)."""

    def __init__(
        self,
        config: LimitsConfig,
        redis: RedisBuckets | None = None,
        *,
        clock: Callable[[], float] = time.time,
    ) -> None:
        self._config = config
        self._redis = redis
        self._local = LocalBuckets(config.local_max_buckets)
        self._clock = clock
        self._timeout_s = config.timeout_ms / 1000.0
        self._redis_down_until = 0.0
        self._redis_up: bool | None = None
        self.fallbacks = 0

    def charge_tokens(self, prompt_tokens: int, max_tokens: int | None) -> int:
        default = self._config.default_max_tokens
        return prompt_tokens + (max_tokens if max_tokens is not None else default)

    def specs(self, caller: Caller | None, route: str, tokens: int) -> list[BucketSpec]:
        specs: list[BucketSpec] = []
        if caller is not None and (caller.rpm or caller.tpm):
            own = RateLimit(rpm=caller.rpm, tpm=caller.tpm)
            specs += _specs(f"key:{caller.key_id}", f"key {caller.key_id}", own, tokens)
        route_limit = self._config.routes.get(route)
        if route_limit is not None:
            specs += _specs(f"route:{route}", f"route {route}", route_limit, tokens)
        return specs

    async def admit(self, caller: Caller | None, route: str, tokens: int) -> dict[str, str]:
        """The `x-ratelimit-*` headers for the answer; raises RateLimited (429)."""
        specs = self.specs(caller, route, tokens)
        if not specs:
            return {}
        for spec in specs:
            if spec.cost > spec.per_minute:
                raise _too_large(spec)
        outcome = await self._take(specs)
        headers = limit_headers(specs, outcome)
        if not outcome.admitted:
            raise _refused(specs, outcome, headers)
        return headers

    def status(self) -> dict[str, object]:
        redis = "off" if self._redis is None else ("up" if self._redis_up is not False else "down")
        return {
            "backend": self._config.backend,
            "redis": redis,
            "local_buckets": len(self._local),
            "fallbacks": self.fallbacks,
        }

    async def close(self) -> None:
        if self._redis is not None:
            await self._redis.close()

    async def _take(self, specs: Sequence[BucketSpec]) -> Outcome:
        now = self._clock()
        if self._redis is not None and now >= self._redis_down_until:
            try:
                async with asyncio.timeout(self._timeout_s):
                    outcome = await self._redis.take(specs, now)
            except self._redis.errors as exc:
                self._redis_failed(exc, now)
            else:
                if self._redis_up is False:
                    logger.warning("limits: Redis answers again; limits are shared again")
                self._redis_up = True
                return outcome
        self.fallbacks += self._redis is not None
        return self._local.take(specs, now)

    def _redis_failed(self, exc: BaseException, now: float) -> None:
        self._redis_down_until = now + self._config.retry_redis_s
        if self._redis_up is not False:
            logger.warning(
                "limits: Redis failed (%s); limits are enforced per process until it "
                "answers (tried again every %g s)",
                type(exc).__name__ if isinstance(exc, TimeoutError) else exc,
                self._config.retry_redis_s,
            )
        self._redis_up = False


def _specs(key: str, owner: str, limit: RateLimit, tokens: int) -> list[BucketSpec]:
    specs = []
    if limit.rpm:
        specs.append(BucketSpec(f"{key}:requests", "requests", limit.rpm, 1, owner))
    if limit.tpm:
        specs.append(BucketSpec(f"{key}:tokens", "tokens", limit.tpm, tokens, owner))
    return specs


def limit_headers(specs: Sequence[BucketSpec], outcome: Outcome) -> dict[str, str]:
    """OpenAI's `x-ratelimit-{limit,remaining,reset}-{requests,tokens}`, each from the
    tightest limit of its kind (the least remaining)."""
    headers: dict[str, str] = {}
    for kind in ("requests", "tokens"):
        mine = [(s, lvl) for s, lvl in zip(specs, outcome.levels, strict=True) if s.kind == kind]
        if not mine:
            continue
        spec, level = min(mine, key=lambda pair: pair[1])
        headers[f"x-ratelimit-limit-{kind}"] = str(spec.per_minute)
        headers[f"x-ratelimit-remaining-{kind}"] = str(max(0, int(level)))
        headers[f"x-ratelimit-reset-{kind}"] = duration(reset_s(spec, level))
    return headers


def _refused(specs: Sequence[BucketSpec], outcome: Outcome, headers: dict[str, str]) -> RateLimited:
    waits = [(wait_s(s, lvl), s, lvl) for s, lvl in zip(specs, outcome.levels, strict=True)]
    wait, spec, level = max(waits, key=lambda item: item[0])
    message = (
        f"Rate limit reached for {spec.owner} on {_PER_MINUTE[spec.kind]}: "
        f"Limit {spec.per_minute}, Remaining {max(0, int(level))}, Requested {spec.cost}. "
        f"Please try again in {duration(wait)}."
    )
    kind: LimitKind = spec.kind
    # Whole seconds, rounded up: a client that waits Retry-After finds the bucket refilled.
    retry_after_s = float(max(1, math.ceil(wait)))
    return RateLimited(message, kind=kind, retry_after_s=retry_after_s, headers=headers)


def _too_large(spec: BucketSpec) -> RateLimited:
    message = (
        f"Request too large for {spec.owner} on {_PER_MINUTE[spec.kind]}: "
        f"Limit {spec.per_minute}, Requested {spec.cost}. Ask for fewer tokens (max_tokens)."
    )
    return RateLimited(message, kind=spec.kind, retry_after_s=None, headers={})
