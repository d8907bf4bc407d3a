"""One way to reach Redis: the connection settings each of its users (the fleet sync, rate
limits, budgets) resolves from its YAML section, and `open_redis`, the one place a client
is built on them, each with the same bounds.

The YAML keys stay where users set them (`state.redis_url`, `limits.redis_url`, ...): the
types and defaults they share are declared here once, and a section that leaves
`redis_url` null uses the next one's along budgets → limits → state (`Config.redis_for`).
redis-py is imported only when a client is opened: every command loads the config, few
need Redis, and redis-py takes a tenth of a second to import.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Annotated, Literal

from pydantic import Field

from gateway.config.strict import StrictConfig

if TYPE_CHECKING:
    from redis.asyncio import Redis

RedisUrl = Annotated[str, Field(pattern=r"^(redis|rediss|unix)://")]
"""A Redis server; credentials may be in the URL (logs show it without them)."""
RedisNamespace = Annotated[str, Field(min_length=1, pattern=r"^[A-Za-z0-9_.:-]+$")]
"""The prefix of every key and channel a user writes: separate fleets, separate prefixes."""


class RedisSettings(StrictConfig):
    """Where one user of Redis connects, under which key prefix, and how long it waits."""

    url: RedisUrl
    namespace: RedisNamespace
    timeout_ms: float = Field(
        gt=0, description="Connecting, each command, and waiting for a free connection."
    )


class RedisBackedSection(StrictConfig):
    """The keys every section whose counters may live in Redis, shared by all replicas,
    has alike (`limits`, `budgets`): the same names, defaults and bounds in each."""

    backend: Literal["local", "redis"] = Field(
        "local", description="Where the counters live: this process, or Redis for all replicas."
    )
    redis_url: RedisUrl | None = Field(
        None, description="null: the next section's, along budgets → limits → state."
    )
    namespace: RedisNamespace = Field("switchyard", description="Key prefix.")
    timeout_ms: float = Field(
        50.0, gt=0, le=5000, description="One Redis round trip, connecting included."
    )
    retry_redis_s: float = Field(
        5.0, gt=0, description="After a Redis failure, counters stay in-process this long."
    )

    def redis_settings(self, fallback_url: str) -> RedisSettings:
        """This section's Redis: its own `redis_url`, else `fallback_url`."""
        url = self.redis_url or fallback_url
        return RedisSettings(url=url, namespace=self.namespace, timeout_ms=self.timeout_ms)


def open_redis(settings: RedisSettings, *, max_connections: int, ping_idle_s: float = 0) -> Redis:
    """A client on `settings`, bounded: at most `max_connections` connections, and a caller
    waits for a free one, for connecting and for each command at most `timeout_ms`.
    redis-py retries nothing: each user has its own way out (in-process counters, the sync's
    reconnect back-off). With `ping_idle_s`, a connection idle that long is PINGed before it
    is used again, so that a subscription that died silently is noticed. Closing the client
    closes its connections."""
    from redis.asyncio import BlockingConnectionPool, Redis
    from redis.asyncio.retry import Retry
    from redis.backoff import NoBackoff

    timeout_s = settings.timeout_ms / 1000
    pool = BlockingConnectionPool.from_url(
        settings.url,
        max_connections=max_connections,
        timeout=timeout_s,
        socket_timeout=timeout_s,
        socket_connect_timeout=timeout_s,
        socket_keepalive=True,
        health_check_interval=ping_idle_s,
        retry=Retry(NoBackoff(), 0),
    )
    return Redis.from_pool(pool)


def redis_errors() -> tuple[type[BaseException], ...]:
    """What a call on an `open_redis` client raises when Redis is down, slow or refusing:
    redis-py's errors, OSError (refused, reset) and TimeoutError. Its users keep the tuple
    beside their client, so nothing imports redis-py before a client exists."""
    from redis.exceptions import RedisError

    return (RedisError, OSError, TimeoutError)
