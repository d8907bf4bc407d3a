"""The `health` channel of the fleet sync: ejections, cool-downs and probe results shared by
gateway replicas, so that N replicas do not each rediscover a bad backend.

The detector hands each verdict to `enqueue` (on the request path: a dict write, nothing
more); the sync task publishes the pending ones each tick on `{namespace}:health` and
hands the peers' messages to `apply` (queueing, publishing and the checks every peer
verdict passes: `verdict_channel`). Applying is idempotent and order-free: an ejection or
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
from gateway.fleet.sync.peer_wire import hold_s, seconds, text
from gateway.fleet.sync.verdict_channel import Envelope, VerdictChannel, VerdictKey
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


class HealthShare(VerdictChannel[HealthEvent, tuple[str, str]]):
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
        # The latest verdict per (backend, kind): one of each kind per configured backend.
        super().__init__(max_age_s, len(caps_s) * len(HEALTH_KINDS), wall=wall)
        self._state = state
        self._caps_s = dict(caps_s)

    def attach(self) -> None:
        self._state.share_health(self.enqueue)

    def detach(self) -> None:
        self._state.share_health(None)

    def reassert(self) -> None:
        """Queue again this replica's own ejections and cool-downs still running."""
        for event in self._state.own_holds():
            self.enqueue(event)

    def enqueue(self, event: HealthEvent) -> None:
        """Queue a verdict reached here; a newer one of the same kind replaces it."""
        self._queue((event.backend, event.kind), event.at_unix, event)

    def _item(self, key: VerdictKey, verdict: HealthEvent, now_unix: float) -> dict[str, object]:
        item: dict[str, object] = {
            "backend": verdict.backend,
            "kind": verdict.kind,
            "why": verdict.reason,
        }
        if verdict.kind == "probe":
            item["ok"] = verdict.ok
        else:
            item["until"] = verdict.until_unix
        return item

    def _subject(self, item: dict[str, Any]) -> tuple[str, str]:
        backend, kind = text(item, "backend"), text(item, "kind")
        if kind not in HEALTH_KINDS or not self._state.knows(backend):
            raise WireError(f"unknown backend or kind: {backend!r}, {kind!r}")
        return backend, kind

    def _apply_verdict(
        self, subject: tuple[str, str], item: dict[str, Any], envelope: Envelope, now_unix: float
    ) -> bool:
        backend, kind = subject
        if kind == "probe":
            ok = item.get("ok")
            if not isinstance(ok, bool):
                raise WireError("ok is not a boolean")
            return self._state.probe_from_peer(backend, ok, envelope.why, envelope.at_unix)
        out_s = hold_s(seconds(item, "until"), now_unix, self._caps_s[backend])
        reason = f"{envelope.why} (replica {envelope.sender[:8]})"
        hold: HealthKind = "cooled" if kind == "cooled" else "ejected"
        return out_s > 0 and self._state.hold_for_peer(backend, out_s, reason, hold)
