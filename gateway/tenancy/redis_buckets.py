"""Token buckets in Redis, shared by every replica: one Lua script charges all of a
request's buckets atomically, in one round trip.

Each bucket is a hash (`l`: level, `t`: the time it was last charged, in ms) that expires
once it would be full again. The time is the calling replica's wall clock; a replica whose
clock is behind sees no refill (elapsed time is never negative) rather than a refund.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from gateway.config.redis import open_redis, redis_errors
from gateway.tenancy.buckets import BucketSpec, Outcome

if TYPE_CHECKING:
    from collections.abc import Sequence

    from gateway.config.redis import RedisSettings

MAX_CONNECTIONS = 64
"""Admissions in flight at once per process; more wait for a connection (bounded by the
same timeout)."""

TAKE_SCRIPT = """
local now = tonumber(ARGV[1])
local levels, stamps, admitted = {}, {}, 1
for i = 1, #KEYS do
  local cap = tonumber(ARGV[i * 3 - 1])
  local rate = tonumber(ARGV[i * 3])
  local cost = tonumber(ARGV[i * 3 + 1])
  local state = redis.call('HMGET', KEYS[i], 'l', 't')
  local level, at = tonumber(state[1]), tonumber(state[2])
  if level == nil or at == nil then level, at = cap, now end
  local elapsed = now - at
  if elapsed < 0 then elapsed = 0 end
  level = math.min(cap, level + elapsed * rate)
  levels[i], stamps[i] = level, math.max(at, now)
  if level < cost then admitted = 0 end
end
local out = {admitted}
for i = 1, #KEYS do
  local cap = tonumber(ARGV[i * 3 - 1])
  local rate = tonumber(ARGV[i * 3])
  local level = levels[i]
  if admitted == 1 then level = level - tonumber(ARGV[i * 3 + 1]) end
  redis.call('HSET', KEYS[i], 'l', tostring(level), 't', tostring(stamps[i]))
  redis.call('PEXPIRE', KEYS[i], math.ceil((cap - level) / rate) + 1000)
  out[i + 1] = tostring(level)
end
return out
"""


class RedisBuckets:
    """The shared bucket store. Raises redis' errors, OSError or TimeoutError; the caller
    bounds each call and falls back to in-process buckets."""

    def __init__(self, settings: RedisSettings) -> None:
        self._client = open_redis(settings, max_connections=MAX_CONNECTIONS)
        self.errors = redis_errors()
        """What its calls raise when Redis fails: the caller\'s cue to fall back."""
        self._script = self._client.register_script(TAKE_SCRIPT)
        self._prefix = f"{settings.namespace}:rl:"

    async def take(self, specs: Sequence[BucketSpec], now_s: float) -> Outcome:
        keys = [self._prefix + spec.key for spec in specs]
        args: list[float | int] = [round(now_s * 1000)]
        for spec in specs:
            args += [spec.per_minute, spec.rate_per_s / 1000.0, spec.cost]
        reply = await self._script(keys=keys, args=args)
        return Outcome(int(reply[0]) == 1, tuple(float(level) for level in reply[1:]))

    async def close(self) -> None:
        await self._client.aclose()
