"""Health detection per backend: the evidence (failures in a row, probe results, 429
cool-downs) and the state it leads to (ejected until when, and why).

Detection apart from action, as in Envoy's outlier detection and the quality book: the
detector says when a backend crosses the failure threshold and for how long it stays out
(a jittered back-off that doubles with each ejection in a row and starts over after a
success). FleetState shows that state in the views (`healthy`, `health_reason`); the
`healthy-filter` policy is what acts on it.

Each verdict (an ejection, a cool-down, a probe result) also goes to `on_event` as a
`HealthEvent`, for the other gateway replicas; theirs come back through `hold` and
`peer_probe`, which never emit one (no echo between replicas).
"""

from __future__ import annotations

import time
from dataclasses import dataclass
from typing import TYPE_CHECKING

from gateway.fleet.backoff import Backoff
from gateway.fleet.sync.health_events import HealthEvent, HealthKind

if TYPE_CHECKING:
    import random
    from collections.abc import Callable, Iterable

    from gateway.config.root import HealthConfig


@dataclass(slots=True)
class BackendHealth:
    """One backend's health evidence and state; only `HealthDetector` writes it."""

    backoff: Backoff
    """The ejection back-off: its attempts are the ejections since the last success."""
    consecutive_failures: int = 0
    failures: int = 0
    ejections: int = 0
    """Ejections ever, for `describe()` and the ejection counter."""
    ejected_until: float = 0.0
    """Clock time the ejection or cool-down ends; not ejected once it has passed."""
    ejected_reason: str = ""
    cooling_until: float = 0.0
    """Clock time the last cool-down (a 429, a spent budget, a peer's hold) ends: while it
    is also `ejected_until`, the backend is out because it asked to be, not for failing."""
    probe_ok: bool = True
    probe_reason: str = "not probed yet"
    probe_at_unix: float = 0.0
    """When the probe state was last set (here or by a peer): older peers' results lose."""
    held_by_peer: bool = False
    """The ejection or cool-down now running is a peer replica's, not this one's verdict."""

    def status(self, now: float) -> tuple[bool, str]:
        """(healthy, reason) at `now`, as the views and `describe()` show it."""
        if self.ejected_until > now:
            left = self.ejected_until - now
            return False, f"{self.ejected_reason}; back in {left:.1f}s"
        if not self.probe_ok:
            return False, self.probe_reason
        return True, "healthy"


class HealthDetector:
    """Keeps every backend's `BackendHealth` and decides its ejections."""

    def __init__(
        self,
        names: Iterable[str],
        config: HealthConfig,
        *,
        clock: Callable[[], float],
        rng: random.Random,
        wall: Callable[[], float] = time.time,
    ) -> None:
        self._config = config
        self._clock = clock
        self._wall = wall
        self.on_event: Callable[[HealthEvent], None] | None = None
        """Called with each verdict reached here; must not block (the request path calls)."""
        # One rng for every backend: the draws follow the order ejections happen in.
        self._backends = {
            name: BackendHealth(Backoff(config.ejection_base_s, config.ejection_max_s, rng=rng))
            for name in names
        }

    def of(self, name: str) -> BackendHealth:
        return self._backends[name]

    def adopt(self, name: str, health: BackendHealth) -> None:
        """Keep deciding on `health`, another detector's record (a config reload)."""
        self._backends[name] = health

    def record_success(self, name: str) -> None:
        """A good response: the failures in a row and the ejection back-off start over."""
        health = self._backends[name]
        health.consecutive_failures = 0
        health.backoff.reset()

    def record_failure(self, name: str, reason: str) -> bool:
        """A backend-side failure (connect error, timeout, 5xx). True when it is the
        `consecutive_failures`-th in a row, which ejects the backend for the next back-off."""
        health = self._backends[name]
        health.failures += 1
        health.consecutive_failures += 1
        if health.consecutive_failures < self._config.consecutive_failures:
            return False
        health.ejections += 1
        out_s = health.backoff.next_s()
        health.ejected_until = self._clock() + out_s
        health.held_by_peer = False
        health.ejected_reason = (
            f"ejected after {health.consecutive_failures} consecutive failures ({reason})"
        )
        health.consecutive_failures = 0
        self._emit(name, "ejected", health.ejected_reason, out_s)
        return True

    def cool_down(self, name: str, seconds: float, reason: str) -> None:
        """Keep traffic off for `seconds` (a 429's Retry-After); never shortens an ejection."""
        if self.hold(name, seconds, reason):
            self._emit(name, "cooled", reason, seconds)

    def hold(
        self,
        name: str,
        seconds: float,
        reason: str,
        *,
        kind: HealthKind = "cooled",
        peer: bool = False,
    ) -> bool:
        """Out for `seconds` unless already out longer (a peer's ejection or cool-down comes
        in here with `peer`, emitting nothing); True when that moved the end later."""
        health = self._backends[name]
        until = self._clock() + seconds
        if until <= health.ejected_until:
            return False
        health.ejected_until = until
        if kind == "cooled":
            health.cooling_until = until
        health.ejected_reason = reason
        health.held_by_peer = peer
        return True

    def own_holds(self) -> list[HealthEvent]:
        """The ejections and cool-downs of this replica's own still running, as verdicts
        restated now (for peers that may have missed them)."""
        now, wall = self._clock(), self._wall()
        return [
            HealthEvent(
                name,
                "cooled" if h.cooling_until >= h.ejected_until else "ejected",
                h.ejected_reason,
                wall,
                until_unix=wall + (h.ejected_until - now),
            )
            for name, h in self._backends.items()
            if h.ejected_until > now and not h.held_by_peer
        ]

    def not_ready(self, name: str, reason: str) -> None:
        """The engine answered that it is not ready yet (loading its model): out until a
        probe says it is, counting no failure and growing no back-off; with active probes
        off, nothing would say so, so out for one probe interval instead."""
        if self._config.active_probes:
            self._set_probe(name, False, reason, self._wall())
            self._emit(name, "probe", reason, ok=False)
        else:
            self.cool_down(name, self._config.probe_interval_s, reason)

    def record_probe(self, name: str, ok: bool, reason: str) -> None:
        """An active probe's result; a good one also clears an ejection that has run out."""
        self._set_probe(name, ok, reason, self._wall())
        self._emit(name, "probe", reason, ok=ok)

    def peer_probe(self, name: str, ok: bool, reason: str, at_unix: float) -> bool:
        """A peer's probe result taken at `at_unix`, unless one taken later is known; True
        when it changed what the backend's view shows. Emits nothing."""
        health = self._backends[name]
        if at_unix <= health.probe_at_unix:
            return False
        changed = (health.probe_ok, health.probe_reason) != (ok, reason)
        self._set_probe(name, ok, reason, at_unix)
        return changed

    def _set_probe(self, name: str, ok: bool, reason: str, at_unix: float) -> None:
        health = self._backends[name]
        health.probe_ok = ok
        health.probe_reason = reason
        health.probe_at_unix = at_unix
        if ok and health.ejected_until and health.ejected_until <= self._clock():
            health.ejected_until = 0.0

    def _emit(
        self, name: str, kind: HealthKind, reason: str, out_s: float = 0.0, *, ok: bool = True
    ) -> None:
        if self.on_event is None:
            return
        now = self._wall()
        until = now + out_s if kind != "probe" else 0.0
        self.on_event(HealthEvent(name, kind, reason, now, until_unix=until, ok=ok))
