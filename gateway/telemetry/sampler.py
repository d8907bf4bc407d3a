"""Once a second: gauges from live state, ejections, refusals' counts and summaries, and
quality changes, scores and probe results handed to the store. Runs on the event loop, off
the request path."""

from __future__ import annotations

import logging
import os
import socket
import time
from datetime import UTC, datetime
from typing import TYPE_CHECKING, Any, TypeVar

from gateway.process.tasks import sleep_to_beat
from gateway.quality.book.audit import stored_reason

if TYPE_CHECKING:
    from collections.abc import Callable, Mapping, Sequence

    from gateway.fleet.state import FleetState
    from gateway.quality.book.quality_book import QualityBook
    from gateway.quality.probes.prober import Prober
    from gateway.telemetry.client_metrics import ConnectionTally
    from gateway.telemetry.metrics import GatewayMetrics
    from gateway.telemetry.pipe import TelemetryPipe
    from gateway.telemetry.refusals import Refusals
    from gateway.telemetry.store_sink import RowWriter

logger = logging.getLogger("switchyard.telemetry")

T = TypeVar("T")


class Sampler:
    def __init__(
        self,
        state: FleetState | Callable[[], FleetState],
        *,
        metrics: GatewayMetrics | None = None,
        book: QualityBook | None = None,
        prober: Prober | None = None,
        store: RowWriter | None = None,
        snapshot_every_s: float = 60.0,
        pipe: TelemetryPipe | None = None,
        store_up: Callable[[], bool] | None = None,
        redis_up: Callable[[], Mapping[str, bool]] | None = None,
        refusals: Refusals | None = None,
        queue_depths: Callable[[], Mapping[tuple[str, str], int]] | None = None,
        connections: ConnectionTally | None = None,
        clock: Callable[[], float] = time.monotonic,
        wall: Callable[[], float] = time.time,
    ) -> None:
        self._fleet = state if callable(state) else (lambda: state)
        """The fleet state to read: a reload's new generation brings its own."""
        self._metrics = metrics
        self._book = book
        self._prober = prober
        self._store = store
        self._snapshot_every_s = snapshot_every_s
        self._pipe = pipe
        self._store_up = store_up
        self._redis_up = redis_up
        self._refusals = refusals
        self._queue_depths = queue_depths
        self._connections = connections
        self._clock = clock
        self._wall = wall
        self._seen = _Increments()
        # What happened before this sampler started is not new to it.
        if book is not None:
            self._seen.new("quality changes", book.change_count)
        if prober is not None:
            self._seen.new("probe results", prober.kept)
        self._snapshot_at = clock()
        # Workers and replicas each keep their own quality book; their rows say whose.
        self._replica = f"{socket.gethostname()}:{os.getpid()}"[:64]

    async def run(self, interval_s: float = 1.0) -> None:
        while True:
            await sleep_to_beat(interval_s)
            try:
                self.tick()
            except Exception:  # telemetry is optional; the loop must outlive a bug
                logger.exception("telemetry sample failed")

    def tick(self) -> None:
        self._sample_backends()
        self._sample_telemetry()
        if self._refusals is not None:
            self._refusals.summarise()
        if self._book is not None:
            self._quality_changes(self._book)
            self._sample_quality(self._book)
        if self._prober is not None and self._store is not None:
            self._probe_results(self._prober, self._store)

    def _sample_backends(self) -> None:
        rows = self._fleet().describe()
        if self._metrics is None:
            return
        self._metrics.sample_backends(
            (str(r["name"]), bool(r["healthy"]), int(str(r["in_flight"]))) for r in rows
        )
        for row in rows:
            name = str(row["name"])
            new = self._seen.new(f"ejections {name}", int(str(row["ejections"])))
            if new:
                self._metrics.ejections.labels(name, "health").inc(new)

    def _sample_telemetry(self) -> None:
        if self._metrics is None:
            return
        if self._pipe is not None:
            new = self._seen.new("pipe dropped", self._pipe.dropped)
            if new:
                self._metrics.dropped.labels("pipe").inc(new)
        if self._store_up is not None:
            self._metrics.store_up.set(1.0 if self._store_up() else 0.0)
        if self._redis_up is not None:
            for use, up in self._redis_up().items():
                self._metrics.redis_up.labels(use).set(1.0 if up else 0.0)
        if self._refusals is not None:
            for (status, code), count in list(self._refusals.counts.items()):
                new = self._seen.new(f"refused {status} {code}", count)
                if new:
                    self._metrics.rejected.labels(str(status), code).inc(new)
        if self._queue_depths is not None:
            self._metrics.admission.sample(self._queue_depths())
        if self._connections is not None:
            self._sample_connections(self._metrics, self._connections)

    def _sample_connections(self, metrics: GatewayMetrics, tally: ConnectionTally) -> None:
        metrics.clients.open.set(tally.open)
        for bound, count in list(tally.closed.items()):
            new = self._seen.new(f"client connections {bound}", count)
            if new:
                metrics.clients.closed.labels(bound).inc(new)

    def _quality_changes(self, book: QualityBook) -> None:
        new = self._seen.new("quality changes", book.change_count)
        for change in _newest(book.changes, new):
            if change.after == "ejected" and self._metrics is not None:
                self._metrics.ejections.labels(change.backend, "quality").inc()
            if self._store is not None:
                view = book.view(change.backend, change.model)
                self._store.put(
                    "quality_events",
                    {
                        "created_at": self._at(change.at),
                        "backend": change.backend,
                        "model": change.model,
                        "replica": self._replica,
                        "from_state": change.before,
                        "to_state": change.after,
                        "reason": stored_reason(view.reason, change.evidence),
                        "fidelity": view.fidelity,
                        "sla": view.sla,
                    },
                )

    def _sample_quality(self, book: QualityBook) -> None:
        pairs = book.pairs()
        views = [(backend, model, book.view(backend, model)) for backend, model in pairs]
        if self._metrics is not None:
            self._metrics.sample_quality(
                (b, m, v.fidelity, v.sla, v.state == "ejected") for b, m, v in views
            )
        now = self._clock()
        if self._store is None or now - self._snapshot_at < self._snapshot_every_s:
            return
        self._snapshot_at = now
        at = self._at(now)
        for backend, model, view in views:
            evidence = book.evidence(backend, model)
            signals = [
                {
                    "signal": s.signal,
                    "score": s.score,
                    "rate": s.rate,
                    "total": s.total,
                    # The half-life's evidence weights: what a restarted gateway starts from.
                    "evidence": list(evidence.get(s.signal, (0.0, 0.0))),
                }
                for s in book.scores(backend, model)
            ]
            row: dict[str, Any] = {
                "created_at": at,
                "backend": backend,
                "model": model,
                "replica": self._replica,
                "state": view.state,
                "fidelity": view.fidelity,
                "sla": view.sla,
                "signals": signals,
            }
            self._store.put("quality_scores", row)

    def _probe_results(self, prober: Prober, store: RowWriter) -> None:
        new = self._seen.new("probe results", prober.kept)
        for result in _newest(prober.results, new):
            store.put(
                "probe_results",
                {
                    "created_at": self._at(result.at),
                    "backend": result.backend,
                    "model": result.model,
                    "replica": self._replica,
                    "kind": result.kind,
                    "ok": result.ok,
                    "detail": result.detail,
                    "tokens": result.tokens,
                    "latency_ms": result.latency_s * 1000.0,
                },
            )

    def _at(self, monotonic: float) -> datetime:
        """A monotonic reading as a wall-clock time (UTC)."""
        return datetime.fromtimestamp(self._wall() - (self._clock() - monotonic), UTC)


class _Increments:
    """Running totals (ejections, drops, rejections, items appended) turned into what is
    new since the last look, one key per total."""

    def __init__(self) -> None:
        self._seen: dict[str, int] = {}

    def new(self, key: str, total: int) -> int:
        new = total - self._seen.get(key, 0)
        self._seen[key] = total
        return max(0, new)


def _newest(items: Sequence[T], count: int) -> list[T]:
    """The last `count` items of a bounded sequence (fewer if some have left it already)."""
    count = min(count, len(items))
    return list(items)[-count:] if count else []
