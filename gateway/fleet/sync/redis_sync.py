"""Gateway replicas that route as one: prefix inserts and load counters shared through Redis.

Nothing here is on the request path. Each replica keeps routing on its own PrefixIndex and
FleetState; a dispatch only appends its prefix insert to a bounded queue (`enqueue`). One
background task, every `publish_interval_ms`:

- publishes the queued inserts on `{namespace}:prefix` (format in wire);
- writes this replica's load to `{namespace}:load:{replica}`, expiring after `load_ttl_s`
  (a replica that dies stops counting once it expires), and lists itself in the set
  `{namespace}:replicas`;
- reads the other replicas' load and hands the sums to FleetState, whose views (what
  policies read) add them to the local counts;

and between ticks it applies the other replicas' inserts to the local PrefixIndex.

Other shared state rides on the same task and connection as `SharedChannel`s, each on its
own channel `{namespace}:{name}`: health verdicts (`health_share`), quality verdicts
(`gateway.quality.shared`) and flow control's tenants' service (`tenant_share`). With
`state.prober_lease`, each tick also renews the probe lease (`probe_lease`): one replica
of the namespace runs the active probes.

Any Redis error degrades the replica to local state: remote load is dropped at once (stale
numbers would keep steering traffic), inserts keep queueing (the oldest are dropped when
the queue is full), the change is logged once, and the task reconnects with capped,
jittered back-off.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import os
import random
from collections import deque
from collections.abc import Sequence
from typing import Any
from urllib.parse import urlsplit, urlunsplit

from redis.asyncio import Redis
from redis.asyncio.client import PubSub
from redis.asyncio.connection import parse_url
from redis.exceptions import RedisError

from gateway.config.redis import open_redis
from gateway.config.root import StateConfig
from gateway.errors import ConfigError
from gateway.fleet.backoff import Backoff
from gateway.fleet.state import FleetState
from gateway.fleet.sync.probe_lease import ProbeLease
from gateway.fleet.sync.shared_channel import SharedChannel
from gateway.fleet.sync.wire import (
    REPLICA_ID_BYTES,
    Insert,
    Load,
    WireError,
    decode_inserts,
    decode_load,
    distinct,
    encode_inserts,
    encode_load,
    sender,
)
from gateway.prefix.index import PrefixIndex

logger = logging.getLogger("switchyard.sync")

_REDIS_ERRORS = (RedisError, OSError)
"""OSError covers refused connections and asyncio's TimeoutError."""
_CONNECTIONS = 2
"""One for commands, one for the subscription; the sync task is their only user."""
_PUBSUB_HEALTH_CHECK_S = 5
"""An idle subscription is PINGed this often, so a silently dead one is noticed."""
_APPLY_SLICE_BLOCKS = 4096
"""Applying peers' inserts yields to the event loop after about this many blocks."""


class RedisFleetSync:
    """Shares this replica's prefix inserts and load with its peers; see the module doc."""

    def __init__(
        self,
        config: StateConfig,
        state: FleetState,
        index: PrefixIndex,
        *,
        channels: Sequence[SharedChannel] = (),
        rng: random.Random | None = None,
    ) -> None:
        try:
            parse_url(config.redis_url)
        except ValueError as exc:
            raise ConfigError("<config>", [f"state.redis_url: {exc}"]) from None
        self._config = config
        self._state = state
        self._index = index
        self._rng = rng or random.Random()
        self._replica = os.urandom(REPLICA_ID_BYTES)
        self.replica_id = self._replica.hex()
        self._channel = f"{config.namespace}:prefix"
        self._members_key = f"{config.namespace}:replicas"
        self._load_prefix = f"{config.namespace}:load:"
        self._channels = {f"{config.namespace}:{c.name}".encode(): c for c in channels}
        self._known_peers: set[str] = set()
        self._reassert_at = 0.0
        self.lease = (
            ProbeLease(f"{config.namespace}:prober", self.replica_id, config.prober_lease_ttl_s)
            if config.prober_lease
            else None
        )
        self._where = _redacted(config.redis_url)
        self._queue: deque[Insert] = deque()
        self._client: Redis | None = None
        self._pubsub: PubSub | None = None
        self._task: asyncio.Task[None] | None = None
        self._stopping = False
        self._connected: bool | None = None  # None until the first attempt settles it
        self._last_error = ""
        self.peers = 0
        self.published = 0
        self.published_messages = 0
        self.published_bytes = 0
        self.applied = 0
        self.dropped = 0
        self.rejected = 0

    @property
    def connected(self) -> bool:
        return self._connected is True

    def enqueue(self, group: str, blocks: Sequence[bytes]) -> None:
        """Queue a local insert for the peers. O(1), never waits: when the queue is full the
        oldest insert is dropped (and counted), since recent prefixes matter most."""
        if len(self._queue) >= self._config.queue_size:
            self._queue.popleft()
            self.dropped += 1
        self._queue.append((group, blocks))

    def queued(self) -> int:
        return len(self._queue)

    def may_probe(self) -> bool:
        """Whether this replica runs its active probes now (one per fleet while shared)."""
        return self.lease is None or self.lease.may_probe()

    def status(self) -> dict[str, object]:
        """What `GET /v1/switchyard/state` shows (fields in docs/config.md#state)."""
        return {
            "sync": "redis",
            "mode": "shared" if self.connected else "local",
            "connected": self.connected,
            "replica_id": self.replica_id,
            "namespace": self._config.namespace,
            "peers": self.peers,
            "queued": len(self._queue),
            "published": self.published,
            "published_messages": self.published_messages,
            "published_bytes": self.published_bytes,
            "applied": self.applied,
            "dropped": self.dropped,
            "rejected": self.rejected,
            "last_error": self._last_error,
            "channels": {c.name: c.status() for c in self._channels.values()},
            "prober": self.lease.status() if self.lease is not None else {"lease": "off"},
        }

    def start(self) -> None:
        for channel in self._channels.values():
            channel.attach()
        self._task = asyncio.create_task(self._run(), name="fleet-sync")
        self._task.add_done_callback(self._on_task_done)

    async def stop(self) -> None:
        """Stop syncing; peers drop this replica's load now rather than after load_ttl_s."""
        self._stopping = True
        task, self._task = self._task, None
        if task is not None:
            task.cancel()
            # A cancel can be swallowed inside redis-py (seen with redis-py 8.1 on Python
            # 3.11, after a reconnect); the loops also watch _stopping and end within a tick.
            await asyncio.wait({task}, timeout=self._stop_timeout_s())
        await self._forget()
        await self._close()
        self._state.set_remote({})
        for channel in self._channels.values():
            channel.detach()

    async def _run(self) -> None:
        backoff = Backoff(
            self._config.publish_interval_ms / 1000,
            self._config.reconnect_max_s,
            rng=self._rng,
            cap_first=False,  # a publish interval above the cap is still waited once in full
        )
        while not self._stopping:
            try:
                client = self._open()
                self._pubsub = pubsub = client.pubsub(ignore_subscribe_messages=True)
                await pubsub.subscribe(self._channel, *self._channels)
                await self._serve(client, pubsub)
            except _REDIS_ERRORS as exc:
                if self._connected:  # it had worked since the last failure: start over
                    backoff.reset()
                self._degrade(exc)
                await self._close()
                await asyncio.sleep(backoff.next_s())

    def _stop_timeout_s(self) -> float:
        return (self._config.publish_interval_ms + 2 * self._config.command_timeout_ms) / 1000

    def _open(self) -> Redis:
        settings = self._config.redis_settings()
        ping_idle_s = _PUBSUB_HEALTH_CHECK_S
        self._client = open_redis(settings, max_connections=_CONNECTIONS, ping_idle_s=ping_idle_s)
        return self._client

    async def _serve(self, client: Redis, pubsub: PubSub) -> None:
        loop = asyncio.get_running_loop()
        interval_s = self._config.publish_interval_ms / 1000
        next_tick = loop.time()
        while not self._stopping:
            if loop.time() >= next_tick:
                await self._tick(client)
                next_tick = loop.time() + interval_s
            wait_s = max(0.0, next_tick - loop.time())
            message = await pubsub.get_message(ignore_subscribe_messages=True, timeout=wait_s)
            if message is not None and message["type"] == "message":
                channel = self._channels.get(message["channel"])
                if channel is not None:
                    channel.apply(message["data"], self.replica_id)
                else:
                    await self._apply(message["data"])

    async def _tick(self, client: Redis) -> None:
        taken = distinct(self._queue)
        self._queue.clear()
        messages = encode_inserts(self._replica, taken)
        ttl_ms = int(self._config.load_ttl_s * 1000)
        try:
            async with client.pipeline(transaction=False) as pipe:
                for message in messages:
                    pipe.publish(self._channel, message)
                for name, channel in self._channels.items():
                    for message in channel.take(self.replica_id):
                        pipe.publish(name, message)
                pipe.set(
                    self._load_prefix + self.replica_id,
                    encode_load(self._state.local_load()),
                    px=ttl_ms,
                )
                pipe.sadd(self._members_key, self.replica_id)
                pipe.pexpire(self._members_key, ttl_ms)
                pipe.smembers(self._members_key)
                replies = await pipe.execute()
        except BaseException:
            self.dropped += len(taken)  # lost with the connection: inserts are only hints
            raise
        self.published += len(taken)
        self.published_messages += len(messages)
        self.published_bytes += sum(len(m) for m in messages)
        await self._read_peers(client, replies[-1])
        if self.lease is not None:
            await self.lease.renew(client)
        self._mark_connected()

    async def _read_peers(self, client: Redis, members: set[bytes]) -> None:
        """Sum the live peers' load; forget peers whose load key has expired."""
        peers = sorted(m.decode() for m in members if m != self.replica_id.encode())
        values: list[Any] = (
            await client.mget([self._load_prefix + p for p in peers]) if peers else []
        )
        gone = [peer for peer, value in zip(peers, values, strict=True) if value is None]
        if gone:
            await client.srem(self._members_key, *gone)
        self._reassert_if_due(set(peers) - set(gone))
        totals: dict[str, Load] = {}
        for value in values:
            if isinstance(value, bytes):
                self._add_load(totals, value)
        self.peers = len(peers) - len(gone)
        self._state.set_remote(totals)

    def _reassert_if_due(self, live: set[str]) -> None:
        """Verdicts still holding are restated to a peer that is new (joined, or back after
        an outage), and to all every half `peer_event_max_age_s`, for one that missed them
        unseen (a short outage of its own)."""
        now = asyncio.get_running_loop().time()
        if live - self._known_peers or now >= self._reassert_at:
            for channel in self._channels.values():
                channel.reassert()
            self._reassert_at = now + self._config.peer_event_max_age_s / 2
        self._known_peers = live

    def _add_load(self, totals: dict[str, Load], value: bytes) -> None:
        try:
            load = decode_load(value)
        except WireError:
            self.rejected += 1
            return
        for name, (in_flight, queued, decoding) in load.items():
            a, b, c = totals.get(name, (0, 0, 0))
            totals[name] = (a + in_flight, b + queued, c + decoding)

    async def _apply(self, data: Any) -> None:
        try:
            if sender(data) == self._replica:
                return
            _, inserts = decode_inserts(data)
        except WireError:
            self.rejected += 1
            return
        since_yield = 0
        for group, blocks in inserts:
            if not self._index.tracks(group):
                continue
            self._index.insert(group, blocks)
            self.applied += 1
            since_yield += len(blocks)
            if since_yield >= _APPLY_SLICE_BLOCKS:
                since_yield = 0
                await asyncio.sleep(0)

    def _mark_connected(self) -> None:
        if self._connected is not True:
            logger.info(
                "fleet sync: sharing state through Redis at %s as replica %s (namespace %s)",
                self._where,
                self.replica_id,
                self._config.namespace,
            )
        self._connected = True
        self._last_error = ""
        if self.lease is not None:
            self.lease.shared = True

    def _degrade(self, exc: BaseException) -> None:
        self._last_error = f"{type(exc).__name__}: {exc}"
        if self._connected is not False:
            logger.warning(
                "fleet sync: Redis at %s unavailable (%s); routing and probing on local state "
                "until it returns",
                self._where,
                self._last_error,
            )
        self._connected = False
        self.peers = 0
        self._known_peers = set()
        self._state.set_remote({})
        if self.lease is not None:
            self.lease.local()

    def _on_task_done(self, task: asyncio.Task[None]) -> None:
        if task.cancelled() or task.exception() is None:
            return
        # A bug, not an outage: say so loudly, and fall back to local state for good.
        logger.error("fleet sync stopped by an error", exc_info=task.exception())
        self._degrade(task.exception() or RuntimeError("fleet sync stopped"))

    async def _forget(self) -> None:
        if self._client is None or not self._connected:
            return
        with contextlib.suppress(*_REDIS_ERRORS):
            async with asyncio.timeout(self._config.command_timeout_ms / 1000):
                if self.lease is not None:
                    await self.lease.release(self._client)
                async with self._client.pipeline(transaction=False) as pipe:
                    pipe.delete(self._load_prefix + self.replica_id)
                    pipe.srem(self._members_key, self.replica_id)
                    await pipe.execute()

    async def _close(self) -> None:
        pubsub, self._pubsub = self._pubsub, None
        client, self._client = self._client, None
        with contextlib.suppress(*_REDIS_ERRORS):
            async with asyncio.timeout(self._config.command_timeout_ms / 1000):
                if pubsub is not None:
                    await pubsub.aclose()
                if client is not None:
                    await client.aclose()


def _redacted(url: str) -> str:
    """The URL without credentials or query, for logs."""
    parts = urlsplit(url)
    netloc = parts.netloc.rpartition("@")[2]
    return urlunsplit((parts.scheme, netloc, parts.path, "", ""))
