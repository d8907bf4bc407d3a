"""Finished requests, handed to the telemetry sinks by one background thread.

The request path only appends a `RequestRecord` to a bounded deque (no lock; a wake-up
only for the first record after a drain: a Condition.notify per request cost more than the
rest of the logging). Woken, the thread lets a batch gather, up to `_GATHER_S` or until
`_BATCH_READY` records wait, whichever comes first, then gives each record to every sink:
the access log, Prometheus, the dashboard's series, the store; an idle gateway's thread
sleeps. The refusals their buckets let through (`refusals.py`) take the same queue to the
sinks that take them (`RefusalSink`). When the queue is full the record is dropped and
counted, never waited for; a sink that fails is logged and the others still run. Sinks
that batch (the access log's writes, Prometheus's counts) are flushed after each batch of
at most `_MAX_BATCH` records, before the batch counts as consumed.
"""

from __future__ import annotations

import logging
import threading
import time
from collections import deque
from typing import TYPE_CHECKING, Protocol, runtime_checkable

from gateway.telemetry.record import RequestRecord

if TYPE_CHECKING:
    from collections.abc import Sequence

    from gateway.telemetry.refusals import RefusalItem

    Item = RequestRecord | RefusalItem

logger = logging.getLogger("switchyard.telemetry")

_GATHER_S = 0.5
"""The longest a record waits for its batch. Under load the batch fills first; at a few
requests a second a drain takes several records instead of one, and handing a record over
costs much less when the sinks' code ran a moment ago than when it comes in cold (an
access log line, metrics and dashboard series at most this much late)."""
_BATCH_READY = 128
"""Records that end the gathering early."""
_IDLE_WAIT_S = 5.0
"""The longest the thread sleeps without being woken (a bound, should a wake-up be missed);
a timeout with nothing queued goes back to sleep at once."""
_MAX_BATCH = 1024
"""Records handed over between two flushes: what a batching sink may hold back."""


class Sink(Protocol):
    name: str

    def consume(self, record: RequestRecord) -> None:
        """Runs on the telemetry thread; must not block for long."""
        ...


@runtime_checkable
class BatchingSink(Sink, Protocol):
    def flush(self) -> None:
        """Runs on the telemetry thread after each batch: write or apply what `consume`
        held back."""
        ...


@runtime_checkable
class RefusalSink(Protocol):
    name: str

    def refused(self, item: RefusalItem) -> None:
        """Runs on the telemetry thread: a refusal a bucket let through, or a summary of
        the lines one held back."""
        ...


class TelemetryPipe:
    def __init__(self, max_queued: int, sinks: Sequence[Sink] = ()) -> None:
        self._max_queued = max_queued
        self._queue: deque[Item] = deque()
        self._sinks: list[Sink] = []
        self._batching: list[BatchingSink] = []
        self._refusal_sinks: list[RefusalSink] = []
        self._stop = threading.Event()
        self._work = threading.Event()
        """Set by the first record after a drain."""
        self._ready = threading.Event()
        """Set when `_BATCH_READY` records wait."""
        self._thread: threading.Thread | None = None
        self.dropped = 0
        self.consumed = 0
        self.cpu_s = 0.0
        """CPU time the thread spent handing records to the sinks."""
        self.failures: dict[str, int] = {}
        for sink in sinks:
            self.add_sink(sink)

    def add_sink(self, sink: Sink) -> None:
        """A sink of records; of refusals too when it is a `RefusalSink`."""
        self._sinks.append(sink)
        if isinstance(sink, BatchingSink):
            self._batching.append(sink)
        if isinstance(sink, RefusalSink):
            self._refusal_sinks.append(sink)

    def start(self) -> None:
        self._stop.clear()
        self._thread = threading.Thread(target=self._run, name="switchyard-telemetry", daemon=True)
        self._thread.start()

    def emit(self, record: Item) -> None:
        if len(self._queue) >= self._max_queued:
            self.dropped += 1
            return
        queue = self._queue
        queue.append(record)
        queued = len(queue)
        if queued == 1:  # the first since the thread last found the queue empty
            self._work.set()
        elif queued == _BATCH_READY:
            self._ready.set()

    def stop(self, timeout_s: float = 2.0) -> None:
        if self._thread is None:
            return
        self._stop.set()
        self._work.set()
        self._ready.set()
        self._thread.join(timeout_s)
        self._thread = None

    def drain(self) -> None:
        """Hand every queued record to the sinks (the thread's loop; tests call it too)."""
        queue = self._queue
        while queue:
            batch = min(len(queue), _MAX_BATCH)
            for _ in range(batch):
                self._hand_over(queue.popleft())
            for sink in self._batching:
                try:
                    sink.flush()
                except Exception:  # as in `_hand_over`
                    self._failed(sink)
                    logger.exception("telemetry sink %s failed to flush", sink.name)
            self.consumed += batch

    def _hand_over(self, record: Item) -> None:
        if not isinstance(record, RequestRecord):
            self._hand_over_refusal(record)
            return
        for sink in self._sinks:
            try:
                sink.consume(record)
            except Exception:  # a broken sink must not stop the others or the thread
                self._failed(sink)
                logger.exception("telemetry sink %s failed", sink.name)
        try:
            # The decision ring keeps it for the API: as bytes from now on. (A record
            # dropped from a full queue stays whole in the ring until it leaves it.)
            record.decision.compact()
        except Exception:  # like a sink: the thread must outlive one bad record
            logger.exception("decision %s could not be compacted", record.decision.decision.id)

    def _hand_over_refusal(self, item: RefusalItem) -> None:
        for sink in self._refusal_sinks:
            try:
                sink.refused(item)
            except Exception:  # as in `_hand_over`
                self._failed(sink)
                logger.exception("telemetry sink %s failed on a refusal", sink.name)

    def _failed(self, sink: Sink | RefusalSink) -> None:
        self.failures[sink.name] = self.failures.get(sink.name, 0) + 1

    def _run(self) -> None:
        while not self._stop.is_set():
            woken = self._work.wait(_IDLE_WAIT_S)
            if not woken and not self._queue:
                continue
            self._work.clear()
            self._ready.clear()  # one left from before: the length check stands in for it
            # `stop` sets `_stop` before `_ready`: a stop whose set the clear undid is seen.
            if len(self._queue) < _BATCH_READY and not self._stop.is_set():
                self._ready.wait(_GATHER_S)  # a batch gathers meanwhile
            if self._stop.is_set():
                break
            started = time.thread_time()
            self.drain()
            self.cpu_s += time.thread_time() - started
        self.drain()
