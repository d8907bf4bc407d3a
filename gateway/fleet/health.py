"""Health detection per backend: the evidence (failures in a row, probe results, 429
cool-downs) and the state it leads to (ejected until when, and why).

Detection apart from action, as in Envoy's outlier detection and the quality book: the
detector says when a backend crosses the failure threshold and for how long it stays out
(a jittered back-off that doubles with each ejection in a row and starts over after a
success). FleetState shows that state in the views (`healthy`, `health_reason`); the
`healthy-filter` policy is what acts on it.
"""

from __future__ import annotations

import random
from collections.abc import Callable, Iterable
from dataclasses import dataclass

from gateway.config import HealthConfig
from gateway.fleet.backoff import Backoff


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
    probe_ok: bool = True
    probe_reason: str = "not probed yet"

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
    ) -> None:
        self._config = config
        self._clock = clock
        # One rng for every backend: the draws follow the order ejections happen in.
        self._backends = {
            name: BackendHealth(Backoff(config.ejection_base_s, config.ejection_max_s, rng=rng))
            for name in names
        }

    def of(self, name: str) -> BackendHealth:
        return self._backends[name]

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
        health.ejected_until = self._clock() + health.backoff.next_s()
        health.ejected_reason = (
            f"ejected after {health.consecutive_failures} consecutive failures ({reason})"
        )
        health.consecutive_failures = 0
        return True

    def cool_down(self, name: str, seconds: float, reason: str) -> None:
        """Keep traffic off for `seconds` (a 429's Retry-After); never shortens an ejection."""
        health = self._backends[name]
        until = self._clock() + seconds
        if until > health.ejected_until:
            health.ejected_until = until
            health.ejected_reason = reason

    def not_ready(self, name: str, reason: str) -> None:
        """The engine answered that it is not ready yet (loading its model): out until a
        probe says it is, counting no failure and growing no back-off; with active probes
        off, nothing would say so, so out for one probe interval instead."""
        if self._config.active_probes:
            health = self._backends[name]
            health.probe_ok = False
            health.probe_reason = reason
        else:
            self.cool_down(name, self._config.probe_interval_s, reason)

    def record_probe(self, name: str, ok: bool, reason: str) -> None:
        """An active probe's result; a good one also clears an ejection that has run out."""
        health = self._backends[name]
        health.probe_ok = ok
        health.probe_reason = reason
        if ok and health.ejected_until and health.ejected_until <= self._clock():
            health.ejected_until = 0.0
