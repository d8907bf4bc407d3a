"""The `health` channel of the fleet sync: ejections, cool-downs and probe results shared by
gateway replicas, so that N replicas do not each rediscover a bad backend.

The detector hands each verdict to `enqueue` (on the request path: a dict write, nothing
more); the sync task publishes the pending ones each tick on `{namespace}:health` and
hands the peers' messages to `apply`. Applying is idempotent and order-free: an ejection or
cool-down only ever moves a backend's end time later (so crossing events settle on the
latest end), and a probe result only replaces one taken earlier. Pub/sub keeps nothing
for a replica that was not listening, so the sync asks for `reassert` (this replica's own
running holds, restated) when a peer appears and every half `peer_event_max_age_s`.
Format in `peer_wire`; an item is

    {"backend": "a", "kind": "ejected" | "cooled", "until": <unix s>, "at": <unix s>, "why": "..."}
    {"backend": "a", "kind": "probe", "ok": false, "at": <unix s>, "why": "..."}
"""

from __future__ import annotations

import time
from collections.abc import Callable, Iterable, Mapping
from typing import Any

from gateway.config.backends import BackendConfig
from gateway.config.root import HealthConfig
from gateway.fleet.backoff import DEFAULT_JITTER
from gateway.fleet.state import FleetState
from gateway.fleet.sync.health_events import HEALTH_KINDS, HealthEvent, HealthKind
from gateway.fleet.sync.peer_wire import apply_batch, encode_batch, fresh, hold_s, seconds, text
from gateway.fleet.sync.wire import WireError


def hold_caps(backends: Iterable[BackendConfig], health: HealthConfig) -> dict[str, float]:
    """The longest a peer's verdict keeps each backend out here: the longest this replica
    would keep it out itself (an ejection's capped back-off with jitter, a 429's capped
    cool-down, an engine not ready with probes off)."""
    ejection_s = health.ejection_max_s * (1.0 + DEFAULT_JITTER)
    return {
        b.name: max(ejection_s, b.rate_limits.max_cool_down_s, health.probe_interval_s)
        for b in backends
    }


class HealthShare:
    """Publishes this replica's health verdicts and applies its peers'; see the module doc."""

    name = "health"

    def __init__(
        self,
        state: FleetState,
        caps_s: Mapping[str, float],
        max_age_s: float,
        *,
        wall: Callable[[], float] = time.time,
    ) -> None:
        self._state = state
        self._caps_s = dict(caps_s)
        self._max_age_s = max_age_s
        self._wall = wall
        # The latest verdict per (backend, kind): bounded by 3 x the configured backends.
        self._pending: dict[tuple[str, str], HealthEvent] = {}
        self.published = 0
        self.applied = 0
        self.stale = 0
        self.rejected = 0

    def attach(self) -> None:
        """Receive this replica's verdicts from now on (the sync is starting)."""
        self._state.share_health(self.enqueue)

    def detach(self) -> None:
        self._state.share_health(None)

    def reassert(self) -> None:
        """Queue again this replica's own ejections and cool-downs still running, stated
        now: for a peer that joined, or reconnected, after they were published."""
        for event in self._state.own_holds():
            self.enqueue(event)

    def enqueue(self, event: HealthEvent) -> None:
        """Queue a verdict reached here; a newer one of the same kind replaces it."""
        key = (event.backend, event.kind)
        self._pending.pop(key, None)
        self._pending[key] = event

    def take(self, replica: str) -> list[bytes]:
        """The messages to publish now; what is queued is handed over (and so lost if the
        publish fails: peers then learn from the next verdict)."""
        pending, self._pending = self._pending, {}
        now = self._wall()
        items = [_item(e) for e in pending.values() if fresh(e.at_unix, now, self._max_age_s)]
        self.published += len(items)
        return encode_batch(replica, items) if items else []

    def apply(self, data: bytes, replica: str) -> None:
        """A peer's message; this replica's own (echoed by pub/sub) is skipped."""
        self.rejected += apply_batch(data, replica, self._wall(), self._apply_item)

    def _apply_item(self, item: dict[str, Any], sender: str, now: float) -> None:
        backend, kind, why = text(item, "backend"), text(item, "kind"), text(item, "why")
        at = seconds(item, "at")
        if kind not in HEALTH_KINDS or not self._state.knows(backend):
            raise WireError(f"unknown backend or kind: {backend!r}, {kind!r}")
        if not fresh(at, now, self._max_age_s):
            self.stale += 1
            return
        if kind == "probe":
            ok = item.get("ok")
            if not isinstance(ok, bool):
                raise WireError("ok is not a boolean")
            changed = self._state.probe_from_peer(backend, ok, why, at)
        else:
            out_s = hold_s(seconds(item, "until"), now, self._caps_s[backend])
            reason = f"{why} (replica {sender[:8]})"
            hold: HealthKind = "cooled" if kind == "cooled" else "ejected"
            changed = out_s > 0 and self._state.hold_for_peer(backend, out_s, reason, hold)
        self.applied += changed

    def status(self) -> dict[str, object]:
        return {
            "queued": len(self._pending),
            "published": self.published,
            "applied": self.applied,
            "stale": self.stale,
            "rejected": self.rejected,
        }


def _item(event: HealthEvent) -> dict[str, object]:
    item: dict[str, object] = {
        "backend": event.backend,
        "kind": event.kind,
        "at": event.at_unix,
        "why": event.reason,
    }
    if event.kind == "probe":
        item["ok"] = event.ok
    else:
        item["until"] = event.until_unix
    return item
