"""The telemetry pipe: every record to every sink, then each batching sink flushed once
per batch, before the batch counts as consumed; a failing sink does not stop the rest."""

from __future__ import annotations

import logging
import threading

import pytest

from gateway.telemetry import pipe as pipe_module
from gateway.telemetry.pipe import TelemetryPipe
from gateway.telemetry.record import RequestRecord
from tests.conftest import until
from tests.gateway.telemetry.builders import record


class Plain:
    name = "plain"

    def __init__(self, events: list[str]) -> None:
        self.events = events

    def consume(self, record: RequestRecord) -> None:
        self.events.append(f"{self.name} {record.at:g}")


class Batching(Plain):
    name = "batching"

    def __init__(self, events: list[str], pipe: TelemetryPipe) -> None:
        super().__init__(events)
        self.pipe = pipe

    def flush(self) -> None:
        self.events.append(f"flush after {self.pipe.consumed} consumed")


class Broken(Batching):
    name = "broken"

    def consume(self, record: RequestRecord) -> None:
        raise RuntimeError("sink bug")

    def flush(self) -> None:
        raise RuntimeError("flush bug")


def test_each_batch_goes_to_every_sink_then_is_flushed_then_counted(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setattr(pipe_module, "_MAX_BATCH", 2)
    events: list[str] = []
    pipe = TelemetryPipe(10)
    pipe.add_sink(Batching(events, pipe))
    pipe.add_sink(Plain(events))
    for at in (1.0, 2.0, 3.0):
        pipe.emit(record(at=at))
    pipe.drain()
    assert events == [
        "batching 1",
        "plain 1",
        "batching 2",
        "plain 2",
        "flush after 0 consumed",
        "batching 3",
        "plain 3",
        "flush after 2 consumed",
    ]
    assert pipe.consumed == 3
    pipe.drain()  # nothing queued: no flush
    assert len(events) == 8


def test_a_failing_sink_or_flush_is_counted_and_the_others_still_run(
    caplog: pytest.LogCaptureFixture,
) -> None:
    events: list[str] = []
    pipe = TelemetryPipe(10)
    pipe.add_sink(Broken(events, pipe))
    pipe.add_sink(Batching(events, pipe))
    pipe.emit(record(at=1.0))
    with caplog.at_level(logging.ERROR, logger="switchyard.telemetry"):
        pipe.drain()
    assert events == ["batching 1", "flush after 0 consumed"]
    assert pipe.failures == {"broken": 2}
    assert pipe.consumed == 1
    assert len(caplog.records) == 2


class WatchedEvent(threading.Event):
    """The pipe's batch-ready event, telling when the thread has begun to wait on it."""

    def __init__(self) -> None:
        super().__init__()
        self.waited = threading.Event()

    def wait(self, timeout: float | None = None) -> bool:
        self.waited.set()
        return super().wait(timeout)


def test_the_thread_gathers_a_batch_and_a_full_batch_goes_at_once(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setattr(pipe_module, "_GATHER_S", 3600.0)  # only a full batch ends it
    monkeypatch.setattr(pipe_module, "_BATCH_READY", 8)
    events: list[str] = []
    pipe = TelemetryPipe(100)
    pipe.add_sink(Plain(events))
    pipe._ready = ready = WatchedEvent()
    pipe.start()
    try:
        for at in range(5):
            pipe.emit(record(at=float(at)))
        assert ready.waited.wait(30), "the thread is woken by the first and gathers"
        assert pipe.consumed == 0
        for at in range(5, 8):
            pipe.emit(record(at=float(at)))
        until(lambda: pipe.consumed >= 8, "the eighth record ends the gathering")
        assert pipe.consumed == 8
        pipe.emit(record(at=8.0))
    finally:
        pipe.stop(timeout_s=30)
    assert pipe.consumed == 9  # stopping hands over what was still gathering
    assert events == [f"plain {at}" for at in range(9)]
