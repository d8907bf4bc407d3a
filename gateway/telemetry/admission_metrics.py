"""Flow control's series: requests held per route and class now, what became of each
request flow control looked at, and how long the held ones waited."""

from __future__ import annotations

from typing import TYPE_CHECKING

from prometheus_client import CollectorRegistry, Counter, Gauge, Histogram

if TYPE_CHECKING:
    from collections.abc import Collection, Mapping

    from gateway.routing.decisions import HeldNote

_WAIT_BUCKETS = (0.005, 0.025, 0.1, 0.25, 0.5, 1.0, 2.0, 5.0, 10.0, 30.0, 60.0)


class AdmissionMetrics:
    """Part of `GatewayMetrics`' registry; label values are routes, classes and a small
    fixed set of outcomes, all bounded by the config."""

    def __init__(self, registry: CollectorRegistry) -> None:
        labels = ("route", "priority")
        self.depth = Gauge(
            "switchyard_queue_depth",
            "Requests held in flow control's queue now, by route and priority class.",
            labels,
            registry=registry,
            multiprocess_mode="livesum",
        )
        self.admissions = Counter(
            "switchyard_admissions",
            "Requests flow control looked at, by outcome: immediate, queued (held, then "
            "released), fallback (moved to a fallback route) or the refusal's code "
            "(deadline_unmeetable, queue_full, queue_timeout, request_shed).",
            (*labels, "outcome"),
            registry=registry,
        )
        self.wait = Histogram(
            "switchyard_queue_wait_seconds",
            "Time held in flow control's queue before release, fallback or refusal.",
            labels,
            buckets=_WAIT_BUCKETS,
            registry=registry,
        )
        self._shown: set[tuple[str, str]] = set()

    def consume(self, route: str, held: HeldNote) -> None:
        """A finished request's note (telemetry thread)."""
        self.admissions.labels(route, held.priority, held.outcome).inc()
        if held.outcome != "immediate":
            self.wait.labels(route, held.priority).observe(held.waited_ms / 1000.0)

    def follow(self, routes: Collection[str]) -> None:
        """Only these routes are served now: a removed one's depth is not set again."""
        self._shown = {key for key in self._shown if key[0] in routes}

    def sample(self, depths: Mapping[tuple[str, str], int]) -> None:
        """Held requests now; a (route, class) emptied since the last sample shows 0."""
        for key in self._shown - depths.keys():
            self.depth.labels(*key).set(0)
        for key, count in depths.items():
            self.depth.labels(*key).set(count)
        self._shown = set(depths)
