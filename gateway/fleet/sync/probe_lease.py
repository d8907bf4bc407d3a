"""One prober per fleet: a Redis lease that lets one replica of a namespace run the active
probes (health and quality) while the others take its results from the shared state.

The lease is the key `{namespace}:prober`, holding the holder's replica id, set with
`SET NX PX state.prober_lease_ttl_s`. The fleet sync's task calls `renew` every tick; it
talks to Redis every third of the TTL: the holder extends its lease (only while the key
still names it), any other replica tries to take a free one. A holder that dies stops
renewing, its lease expires, and another replica holds it within the TTL plus a third of
it, and probes from its next cycle. A holder that stops releases it at once.

Without Redis (not configured, unreachable, or lost) every replica probes for itself, as
a single gateway does: `may_probe` is then always true. Until the first connection attempt
settles which it is (at most `state.command_timeout_ms`), nobody probes.
"""

from __future__ import annotations

import time
from collections.abc import Callable

from redis.asyncio import Redis

_RENEW = """
if redis.call('get', KEYS[1]) == ARGV[1] then
    return redis.call('pexpire', KEYS[1], ARGV[2])
end
return 0
"""
_RELEASE = """
if redis.call('get', KEYS[1]) == ARGV[1] then
    return redis.call('del', KEYS[1])
end
return 0
"""
_RENEWALS_PER_TTL = 3
_NOT_HELD = {True: "elsewhere", False: "local", None: "pending"}


class ProbeLease:
    """Whether this replica may probe now; renewed by the fleet sync's task."""

    def __init__(
        self,
        key: str,
        holder: str,
        ttl_s: float,
        *,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self._key = key
        self._holder = holder
        self._ttl_ms = int(ttl_s * 1000)
        self._every_s = ttl_s / _RENEWALS_PER_TTL
        self._clock = clock
        self._next_at = 0.0
        self.shared: bool | None = None
        """Set by the sync: true while Redis answers, false without it (every replica then
        probes); None until its first attempt settles which, when nobody probes yet."""
        self.holding = False
        self.acquired = 0
        self.lost = 0
        self.allowed_cycles = 0
        self.skipped_cycles = 0

    def may_probe(self) -> bool:
        """Asked once per probe cycle: run it here now? Counted either way."""
        allowed = self.holding or self.shared is False
        if allowed:
            self.allowed_cycles += 1
        else:
            self.skipped_cycles += 1
        return allowed

    async def renew(self, client: Redis) -> None:
        """Extend or try to take the lease, if a third of its TTL has passed since the
        last try. Redis errors propagate (the sync then degrades to local probing)."""
        now = self._clock()
        if now < self._next_at:
            return
        self._next_at = now + self._every_s
        if self.holding:
            kept = await client.eval(_RENEW, 1, self._key, self._holder, self._ttl_ms)
            if not kept:
                self.holding = False
                self.lost += 1
        if not self.holding:
            taken = await client.set(self._key, self._holder, nx=True, px=self._ttl_ms)
            if taken:
                self.holding = True
                self.acquired += 1

    def local(self) -> None:
        """Redis is gone: probe here until it returns, and try for the lease at once then."""
        self.shared = False
        self.holding = False
        self._next_at = 0.0

    async def release(self, client: Redis) -> None:
        """Give the lease up (stopping), so another replica takes it without waiting."""
        if self.holding:
            self.holding = False
            await client.eval(_RELEASE, 1, self._key, self._holder)

    def status(self) -> dict[str, object]:
        return {
            "lease": "held" if self.holding else _NOT_HELD[self.shared],
            "acquired": self.acquired,
            "lost": self.lost,
            "cycles_run": self.allowed_cycles,
            "cycles_skipped": self.skipped_cycles,
        }
